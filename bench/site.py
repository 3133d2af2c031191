"""The site benchmark (`make bench`, or `python -m bench.site`).

Starts its own embedded Valkey in a temporary directory, loads a realistic data set through the
apps' own services (the demo data, a few hundred buyers, the demo catalog plus generated books,
a partly booked season), serves the site with gunicorn exactly as production does (DEBUG=0,
sync workers, WEB_CONCURRENCY or 2 x cores), and drives it with wrk (Debian's package; installed
when missing and we are root). wrk is pinned with taskset to its own core(s) where the machine
has them. Every row runs a warm-up, then a measured run at the same concurrency.

Two reference rows are measured in the same run: a bare Django view returning a short text and
a bare view rendering the site's base template without touching the store (bench/views.py,
routed only when STRONGROOM_BENCH_VIEWS=1). Each of the site's rows is also given as a ratio of
the base-template row's requests/s.

Prints one Markdown table, writes it to bench/results/<date>.md and refreshes the quote in the
README (between the `bench:site` markers).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.site_common import (
    FREE_BOX_COUNT,
    FREE_BOX_FIRST,
    GENERATED_BOOKS,
    POSTING_BUYERS,
    ROOT,
    WRK_SCRIPT,
    log,
)
from bench.site_data import DataSet, load_data
from bench.site_http import csrf_identity, fetch, page_text, serve, session_cookie
from bench.site_report import machine, quote_in_readme, table, write_results
from bench.site_rows import Row, bookings_stored, build_rows, url

# --- set-up ------------------------------------------------------------------------------------


def ensure_wrk() -> str:
    """The wrk binary; Debian's package is installed when missing and we are root."""
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() != 0:
        sys.exit("wrk is missing: install Debian's package (apt-get install wrk) and rerun.")
    log("installing wrk (apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "wrk"]
    if subprocess.run(install, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=True, capture_output=True)
        subprocess.run(install, env=env, check=True, capture_output=True)
    found = shutil.which("wrk")
    if not found:
        sys.exit("wrk could not be installed")
    return found


@dataclass(frozen=True)
class Placement:
    """Which CPUs the load generator and the server get."""

    wrk_cpus: list[int]
    server_cpus: list[int]
    note: str


def placement() -> Placement:
    """wrk on the last core(s); the server on the rest when there are enough cores to split."""
    cpus = sorted(os.sched_getaffinity(0))
    if not shutil.which("taskset") or len(cpus) < 2:
        return Placement([], [], "wrk not pinned (one core or no taskset)")
    if len(cpus) >= 4:
        wrk_count = max(1, len(cpus) // 4)
        wrk, server = cpus[-wrk_count:], cpus[:-wrk_count]
        return Placement(wrk, server, f"wrk pinned to CPU {_cpus(wrk)}, server to {_cpus(server)}")
    return Placement(
        cpus[-1:],
        [],
        f"wrk pinned to CPU {cpus[-1]}; the server uses every core (too few to split)",
    )


def _cpus(cpus: list[int]) -> str:
    return ",".join(str(c) for c in cpus)


def configure(data_dir: Path, secret: str) -> dict[str, str]:
    """Environment of the served site and of this process; then set Django up."""
    env = {
        "DJANGO_SETTINGS_MODULE": "strongroom.settings",
        "DEBUG": "0",
        "SECRET_KEY": secret,
        "SECURE_COOKIES": "0",
        "STRONGROOM_DATA_DIR": str(data_dir),
        "STRONGROOM_BENCH_VIEWS": "1",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LOG_LEVEL": "ERROR",
    }
    os.environ.update(env)
    os.environ.pop("REDIS_URL", None)  # never the user's store: our own, in a temporary dir
    import django

    django.setup()
    from strongroom import store

    # The embedded server starts as `make run` starts it (its fsync policy from the settings);
    # the served site gets its URL, so only this process manages it.
    url = store.store_url()
    return {**os.environ, **env, "REDIS_URL": url}


# --- running wrk ---------------------------------------------------------------------------------


@dataclass
class Runner:
    wrk: str
    base: str
    place: Placement
    connections: int
    identities: dict[str, list[tuple[str, str]]]
    days: list[dt.date]
    rooms: int
    run_index: int = 0

    def env(self, row: Row) -> dict[str, str]:
        identities = self.identities.get(row.who, [])
        headers = "\n".join(f"{k}: {v}" for k, v in row.headers.items())
        self.run_index += 1
        return {
            **os.environ,
            "SR_MODE": "post" if row.method == "POST" else "get",
            "SR_METHOD": row.method,
            "SR_HEADERS": headers,
            "SR_IDENTITIES": "\n".join(f"{c}\t{t}" for c, t in identities),
            "SR_BODY": row.body,
            "SR_SLOTS": row.slots,
            "SR_DAYS": ",".join(d.isoformat() for d in self.days),
            "SR_ROOMS": str(self.rooms),
            "SR_BOX_FIRST": str(FREE_BOX_FIRST),
            "SR_BOX_COUNT": str(FREE_BOX_COUNT),
            "SR_SLOT_START": str(self.run_index * 2_000_000),
            "SR_EXPECTED_ERROR": str(next((s for s in row.expect if s >= 400), 0)),
        }

    def wrk_command(self, row: Row, seconds: float) -> list[str]:
        threads = max(1, len(self.place.wrk_cpus))
        command = [
            self.wrk, f"-t{threads}", f"-c{self.connections}", f"-d{max(1, round(seconds))}s",
            "--timeout", "10s", "-s", str(WRK_SCRIPT), self.base + row.path,
        ]  # fmt: skip
        if self.place.wrk_cpus:
            command = ["taskset", "-c", _cpus(self.place.wrk_cpus), *command]
        return command

    def run(self, row: Row, seconds: float) -> dict[str, Any]:
        done = subprocess.run(
            self.wrk_command(row, seconds), env=self.env(row), capture_output=True, text=True
        )
        for line in done.stderr.split("SRBAD ")[1:2]:
            log(f"{row.label}: first unexpected answer: {page_text(line)[:800]}")
        for line in done.stdout.splitlines():
            if line.startswith("SRJSON "):
                result = json.loads(line[len("SRJSON ") :])
                result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
                return result
        raise RuntimeError(f"wrk gave no result for {row.label}:\n{done.stdout}\n{done.stderr}")

    def settle(self, limit: float = 90) -> None:
        """Wait until requests still queued from the last row are served (a slow page leaves
        a backlog behind wrk): /healthz must answer quickly three times in a row."""
        deadline = time.monotonic() + limit
        quick = 0
        while quick < 3 and time.monotonic() < deadline:
            started = time.monotonic()
            fetch(self.base, "/healthz")
            quick = quick + 1 if time.monotonic() - started < 0.05 else 0

    def preflight(self, row: Row) -> None:
        """One request as wrk will send it: the status must be the expected one."""
        identities = self.identities.get(row.who, [])
        cookie = identities[0][0] if identities else ""
        body = row.body
        if row.method == "POST":
            from booking.rules import booking_new_id

            day = self.days[-1].isoformat()
            values = {"token": identities[0][1], "uid": booking_new_id(room=1).split("-", 1)[1]}
            if row.slots == "distinct":
                values |= {"room": "001", "date": day, "hour": "0", "hour_end": "1"}
                values |= {"box": str(FREE_BOX_FIRST + FREE_BOX_COUNT - 1)}
            body = re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), body)
        started = time.monotonic()
        status, _headers, text = fetch(
            self.base, row.path, method=row.method, cookie=cookie, body=body, headers=row.headers
        )
        row.alone_ms = (time.monotonic() - started) * 1000
        if status not in row.expect:
            raise RuntimeError(
                f"{row.label}: {row.method} {row.path} answered {status}, expected {row.expect}:"
                f"\n{text[:1500]}"
            )


# --- main ----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the site benchmark; print the table."""
    parser = argparse.ArgumentParser(prog="python -m bench.site", description=__doc__)
    parser.add_argument("--seconds", type=float, default=10, help="measured seconds per row")
    parser.add_argument("--warmup", type=float, default=2, help="warm-up seconds per row")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="gunicorn workers (default WEB_CONCURRENCY or 2 x cores)",
    )
    parser.add_argument("--only", default="", help="run only rows whose label contains this")
    parser.add_argument(
        "--note", default="", help="a line for the results file (e.g. shared machine)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; no results file")
    args = parser.parse_args(argv)

    started = dt.datetime.now().astimezone()
    wrk = ensure_wrk()
    place = placement()
    if place.server_cpus:
        os.sched_setaffinity(0, place.server_cpus)  # Valkey and gunicorn inherit it
    workers = args.workers or int(os.environ.get("WEB_CONCURRENCY", 0)) or 2 * (os.cpu_count() or 1)
    data_dir = Path(tempfile.mkdtemp(prefix="sr-bench-site-"))
    server: subprocess.Popen[bytes] | None = None
    before = machine()
    try:
        log(f"embedded store in {data_dir}")
        env = configure(data_dir, secrets.token_urlsafe(40))
        from django.conf import settings

        from strongroom import store

        client = store.get_store()
        info = store.check(client)
        rng = random.Random(20261201)
        t0 = time.monotonic()
        data = load_data(client, rng)
        load_seconds = time.monotonic() - t0
        log(f"data loaded in {load_seconds:.0f} s; starting gunicorn with {workers} workers")
        server, base = serve(env, workers)

        buyer_cookies = [session_cookie(client, b) for b in data.buyers[:POSTING_BUYERS]]
        csrf_page = url("accounts:login") or "/"
        identities = {
            "anonymous": [],
            "buyer": [csrf_identity(base, c, csrf_page) for c in buyer_cookies],
            "staff": [csrf_identity(base, session_cookie(client, data.staff), csrf_page)],
        }
        rows = [r for r in build_rows(data) if args.only.lower() in r.label.lower()]
        runner = Runner(
            wrk, base, place, args.connections, identities, data.bookable_days,
            settings.STRONGROOM_ROOM_COUNT,
        )  # fmt: skip
        for row in rows:
            if row.missing:
                log(f"skip {row.label}: {row.missing}")
                continue
            try:
                runner.preflight(row)
            except RuntimeError as exc:
                log(str(exc))
                row.missing = str(exc).split(":\n", 1)[0].split(": ", 1)[1]
                continue
            log(f"{row.label}: warm-up {args.warmup:.0f} s, then {args.seconds:.0f} s")
            stored = bookings_stored(client)
            warm = runner.run(row, args.warmup) if args.warmup > 0 else {"s3xx": 0}
            runner.settle()  # a slow page's warm-up leaves a queue that would eat the run
            row.result = runner.run(row, args.seconds)
            runner.settle()
            if row.slots == "distinct":
                made = bookings_stored(client) - stored
                redirects = warm["s3xx"] + row.result["s3xx"]
                # Requests in flight when wrk stops are still served: at most one per
                # connection per run is stored without wrk seeing its confirmation.
                late = made - redirects
                ok = 0 <= late <= 2 * args.connections
                row.result["note"] = (
                    f"{'' if ok else 'MISMATCH: '}{made} bookings stored for {redirects} "
                    f"confirmations seen (+{late} answered after wrk stopped)"
                )
        block = table(rows)
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
        from strongroom import embedded

        embedded.stop(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)

    print(block)
    if args.no_write:
        return 0
    report = results_text(block, started, before, info, workers, place, args, data, load_seconds)
    path = write_results(report, started)
    print(f"\nwritten to {path.relative_to(ROOT)}")
    if quote_in_readme(block, path):
        print("quoted in README.md (Performance)")
    return 0


def results_text(
    block: str, started: dt.datetime, before: dict[str, str], info: dict[str, str], workers: int,
    place: Placement, args: argparse.Namespace, data: DataSet, load_seconds: float,
) -> str:  # fmt: skip
    """The dated results file: conditions, data set, the table (one line per paragraph)."""
    from django.conf import settings

    share = data.booked_share
    busy = float(before["load"].split()[0])
    lines = [
        f"# Site benchmark, {started:%Y-%m-%d %H:%M %Z}",
        "",
        "`make bench` (`python -m bench.site`): gunicorn (sync workers) serving the site with "
        f"`DEBUG=0` on an embedded {info['server']} {info['version']} (AOF, `appendfsync "
        f"{settings.STRONGROOM_EMBEDDED_APPENDFSYNC}`, `STRONGROOM_DURABILITY="
        f"{settings.STRONGROOM_DURABILITY}`), driven by wrk with {args.connections} connections; "
        f"{args.warmup:.0f} s warm-up, then {args.seconds:.0f} s measured per row.",
        "",
        '"vs base template" is the row\'s requests/s as a share of the reference rows that '
        "render the site's base template without touching the store (the mean of the run at "
        'the start and the one at the end). "alone ms" is one '
        "request on the idle server (the check made before each row); p50 and p99 include the "
        f"wait behind the other connections' requests ({args.connections} clients on "
        f"{workers} workers).",
        "",
        f"- Machine: {before['cpus']} CPUs ({before['model']}), Python {before['python']}; "
        f"load average before the run {before['load']}.",
    ]
    if busy > 0.5 * int(before["cpus"]):
        lines.append(
            "- The machine was busy with other work when the run started (1-minute load "
            f"average {busy:.1f} on {before['cpus']} CPUs): compare rows within this run "
            "rather than with other runs."
        )
    if args.note:
        lines.append(f"- Note: {args.note}")
    lines += [
        f"- Server: {workers} gunicorn workers; {place.note}.",
        f"- Data set (loaded in {load_seconds:.0f} s): {len(data.buyers)} buyers and one staff "
        f"member plus the demo people; {data.books:,} books with {data.tags} tags (the demo "
        f"catalog plus {GENERATED_BOOKS:,} generated); {data.bookings:,} bookings over "
        f"{settings.STRONGROOM_ROOM_COUNT} rooms and {len(data.bookable_days)} bookable days "
        f"({share.get('A', 0):.0%} of class A room-days, {share.get('B', 0):.0%} of class B "
        "room-hours, class C: 1-3 of boxes 1-50 for two hours on 30% of room-days).",
        f"- Logged-in rows rotate over {POSTING_BUYERS} buyers' sessions (the dashboard: one "
        "staff session); POST rows carry each buyer's CSRF cookie and token.",
        "",
        block,
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
