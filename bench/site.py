"""The site benchmark (`make bench`, or `python -m bench.site`).

Starts its own embedded Valkey in a temporary directory, loads a realistic data set through the
apps' own services (the demo data, a few hundred buyers, the demo catalog plus generated books,
a partly booked season), serves the site with gunicorn exactly as `make run` does (DEBUG=0,
gevent workers: WEB_CONCURRENCY or one per core), and drives it with wrk
(Debian's package; installed when missing and we are root). Every row runs a warm-up, then a
measured run at the same concurrency. Signed-in rows rotate over 32 buyers' sessions: each
request carries the next buyer's cookie.

Floors, measured in the same run: a bare Django view returning a short text, and the site's
base template signed in as the page rows are (its header reads the session and the person, as
every page's does), at the start and again at the end. Each page also has an in-memory twin
(bench/twin.py): the same request served by the same worker, middleware, view and template with
the store's answers replayed from memory; page / twin is the share of a page's time that is not
the store's. A render-only twin (bench/render_twin.py) renders the page's template again from
its kept context: page / render-only is the share that is not the store, the middleware or the
view's own work. A page and its twins run in turn, three rounds by default (`--rounds`): the
row shows the round with the median page/twin ratio and notes every round's.

Prints one Markdown table, writes it to bench/results/<date>-<HHMM>.md and refreshes the quote
in docs/performance.md (between the `bench:site` markers).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.compare_side import mail_drained
from bench.site_common import GENERATED_BOOKS, POSTING_BUYERS, ROOT, log
from bench.site_data import DataSet, load_data
from bench.site_http import csrf_identity, serve, session_cookie
from bench.site_report import claim_note, cpu_table, machine, quote_in_readme, table, write_results
from bench.site_rows import RACERS, Row, bookings_stored, build_rows
from bench.site_wrk import Placement, Runner, ensure_wrk, placement

# --- set-up ------------------------------------------------------------------------------------


def configure(data_dir: Path, secret: str) -> dict[str, str]:
    """Environment of the served site and of this process; then set Django up."""
    env = {
        "DJANGO_SETTINGS_MODULE": "strongroom.settings",
        "DEBUG": "0",
        "SECRET_KEY": secret,
        "SECURE_COOKIES": "0",
        "STRONGROOM_DATA_DIR": str(data_dir),
        "STRONGROOM_BENCH_VIEWS": "1",
        # Each of the 300 buyers books dozens of times a run: the hourly allowance per buyer is
        # still checked on every booking (its round trip is measured) but never reached.
        "STRONGROOM_BOOKINGS_PER_HOUR": "100000",
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
    # Loading pipelines of thousands of commands on a busy machine may take longer than the
    # site's 1.5 s command timeout; loading is not what is measured (the served site keeps it).
    store.COMMAND_TIMEOUT_S = 60.0
    return {**os.environ, **env, "REDIS_URL": url}


# --- main ----------------------------------------------------------------------------------------

CPU_NOTE = (
    "\nCPU milliseconds per request, by who spent them, in the run the table shows (each page's "
    "median round) and in its in-memory twin's (bench/cpu.py; /proc before and after each wrk "
    "run): the gunicorn workers (user and system time; they include each process's mail sender "
    "and visit flushes), the store's process, wrk, and the rest of the machine's busy time "
    "(the kernel's own threads: the file system's journal, softirqs). On a saturated machine "
    "requests/s is about the CPUs over the busy time; switches are context switches per "
    "request.\n\n"
)


def measure(runner: Runner, row: Row, client: Any, args: argparse.Namespace) -> None:
    """Preflight, warm-up and the measured run of one row; POST rows count what was stored."""
    if row.missing:
        log(f"skip {row.label}: {row.missing}")
        return
    try:
        runner.preflight(row)
    except RuntimeError as exc:
        log(str(exc))
        row.missing = str(exc).split(":\n", 1)[0].split(": ", 1)[1]
        return
    log(f"{row.label}: warm-up {args.warmup:.0f} s, then {args.seconds:.0f} s")
    stored = bookings_stored(client)
    warm = runner.run(row, args.warmup) if args.warmup > 0 else None
    runner.settle()  # a slow page's warm-up leaves a queue that would eat the run
    row.result = runner.run(row, args.seconds)
    log(f"{row.label}: {row.result['rps']:,.0f} requests/s")
    runner.settle()
    if row.method == "POST" and not row.twin_of:
        made = bookings_stored(client) - stored
        row.result["note"] = claim_note(row, warm, made, args.connections)


def measure_with_twin(runner: Runner, row: Row, client: Any, args: argparse.Namespace) -> None:
    """A page, its in-memory twin and its render-only twin measured one after the other,
    `args.rounds` times (a machine that gets busier or quieter meanwhile weighs on all alike);
    the row keeps the round whose page/twin ratio is the median, and notes every round's."""
    twins = [twin for twin in (row.twin, row.render) if twin is not None]
    if not twins:
        measure(runner, row, client, args)
        return
    rounds: list[list[dict[str, Any]]] = []
    for _ in range(max(1, args.rounds)):
        measure(runner, row, client, args)
        if row.missing:
            return
        for twin in twins:
            measure(runner, twin, client, args)
            if twin.missing or not twin.result["rps"]:
                return
        rounds.append([row.result] + [twin.result for twin in twins])
    ratios = [page["rps"] / twin["rps"] for page, twin, *_ in rounds]
    middle = sorted(range(len(rounds)), key=lambda i: ratios[i])[len(rounds) // 2]
    row.result = rounds[middle][0]
    for twin, result in zip(twins, rounds[middle][1:], strict=True):
        twin.result = result
    spread = " / ".join(f"{ratio:.0%}" for ratio in ratios)
    note = row.result.get("note", "")
    row.result["note"] = f"vs twin by round {spread}" + (f"; {note}" if note else "")


def main(argv: list[str] | None = None) -> int:
    """Run the site benchmark; print the table."""
    parser = argparse.ArgumentParser(prog="python -m bench.site", description=__doc__)
    parser.add_argument("--seconds", type=float, default=5, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=1, help="warm-up seconds per run")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="runs of each page and its twins, in turn (the row shows the median page/twin)",
    )
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="gunicorn workers (default WEB_CONCURRENCY or one per core)",
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
    from strongroom.serving import default_workers

    workers = args.workers or int(os.environ.get("WEB_CONCURRENCY", 0)) or default_workers()
    data_dir = Path(tempfile.mkdtemp(prefix="sr-bench-site-"))
    server: subprocess.Popen[bytes] | None = None
    before = machine()
    try:
        log(f"embedded store in {data_dir}")
        env = configure(data_dir, secrets.token_urlsafe(40))
        from django.conf import settings

        from strongroom import embedded, health, store

        client = store.get_store()
        info = health.check(client)
        rng = random.Random(20261201)
        t0 = time.monotonic()
        data = load_data(client, rng)
        load_seconds = time.monotonic() - t0
        log(f"data loaded in {load_seconds:.0f} s; gunicorn: {workers} gevent workers")
        server, base = serve(env, workers)
        log(f"the data set's mail sent in {mail_drained(client):.0f} s")

        buyer_cookies = [session_cookie(client, b) for b in data.buyers[:POSTING_BUYERS]]
        # Any page of the site carries a form (the language switch) and its CSRF cookie; the
        # login page sends someone signed in on.
        csrf_page = "/"
        identities = {
            "anonymous": [],
            "buyer": [csrf_identity(base, c, csrf_page) for c in buyer_cookies],
            "staff": [csrf_identity(base, session_cookie(client, data.staff), csrf_page)],
        }
        rows = [r for r in build_rows(data) if args.only.lower() in r.label.lower()]
        runner = Runner(
            wrk, base, place, args.connections, identities, data.bookable_days,
            settings.STRONGROOM_ROOM_COUNT, pids=(server.pid, embedded.server_pid(data_dir) or 0),
        )  # fmt: skip
        for row in rows:
            measure_with_twin(runner, row, client, args)
        block = table(rows)
        costs = cpu_table(rows)
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
    print(f"\nCPU ms per request:\n\n{costs}")
    if args.no_write:
        return 0
    server_line = f"{workers} gevent workers"
    report = (
        results_text(block, started, before, info, server_line, place, args, data, load_seconds)
        + CPU_NOTE
        + costs
        + "\n"
    )
    path = write_results(report, started)
    print(f"\nwritten to {path.relative_to(ROOT)}")
    if quote_in_readme(f"{block}\n\nCPU ms per request:\n\n{costs}", path):
        print("quoted in docs/performance.md")
    return 0


def results_text(
    block: str, started: dt.datetime, before: dict[str, str], info: dict[str, str], server: str,
    place: Placement, args: argparse.Namespace, data: DataSet, load_seconds: float,
) -> str:  # fmt: skip
    """The dated results file: conditions, data set, the table (one line per paragraph)."""
    from django.conf import settings

    from strongroom import durable, store

    share = data.booked_share
    busy = float(before["load"].split()[0])
    lines = [
        f"# Site benchmark, {started:%Y-%m-%d %H:%M %Z}",
        "",
        f"`make bench` (`python -m bench.site`): gunicorn ({server}) serving the site with "
        f"`DEBUG=0` on an embedded {info['server']} {info['version']} (AOF, `appendfsync "
        f"{settings.STRONGROOM_EMBEDDED_APPENDFSYNC}`, durability "
        f"`{durable.durability(store.get_store())}`), driven by wrk with {args.connections} "
        "connections; "
        f"{args.warmup:.0f} s warm-up, then {args.seconds:.0f} s measured per run; each page and "
        f"its two twins run in turn {args.rounds} times, and the row shows the round whose "
        "page/twin ratio is the median (every round's ratio is in the last column).",
        "",
        '"vs signed-in base template" is the row\'s requests/s as a share of the reference rows '
        "that render the site's base template signed in (the session and person read, nothing "
        'else; the mean of the run at the start and the one at the end). "in-memory twin" is '
        "the same page served by the same worker, middleware, view and template with every "
        'answer of the store replayed from memory (bench/twin.py): "vs twin" is the page\'s '
        'share of it, what is left when the store costs nothing. "render-only" is stricter: '
        "the page's template rendered again from the context it was rendered with, without the "
        "view's own work, the store or the session middleware (bench/render_twin.py). "
        '"alone ms" is one request on the idle server (the check made before each row); p50 '
        "and p99 include the "
        f"wait behind the other connections' requests ({args.connections} clients on "
        f"{server}).",
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
        f"- Server: {server}; {place.note}.",
        f"- Data set (loaded in {load_seconds:.0f} s): {len(data.buyers)} buyers and one staff "
        f"member plus the demo people; {data.books:,} books with {data.tags} tags (the demo "
        f"catalog plus {GENERATED_BOOKS:,} generated); {data.bookings:,} bookings over "
        f"{settings.STRONGROOM_ROOM_COUNT} rooms and {len(data.bookable_days)} bookable days "
        f"({share.get('A', 0):.0%} of class A room-days, {share.get('B', 0):.0%} of class B "
        "room-hours, class C: 1-3 of boxes 1-50 for two hours on 30% of room-days).",
        f"- Signed-in rows rotate over {POSTING_BUYERS} buyers' sessions, a different cookie on "
        "each request (the dashboard: one staff session); POST rows carry each buyer's CSRF "
        f"cookie and token. In the race row {RACERS} consecutive requests (different buyers, in "
        "flight together) ask for the same fresh class C slot, then the next slot.",
        "",
        block,
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
