"""The site benchmark's load generator: wrk, where it runs, and one run of one row."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from bench.cpu import per_request, snapshot
from bench.site_common import FREE_BOX_COUNT, FREE_BOX_FIRST, WRK_SCRIPT, log
from bench.site_http import fetch, page_text
from bench.site_rows import RACERS, Row


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
    """With 4 CPUs or more, wrk gets its own quarter and the server the rest. With fewer there
    is nothing to isolate: wrk, the workers and the store share every CPU, and the report says
    so (pinning wrk to one of two CPUs would only pretend to keep it apart)."""
    cpus = sorted(os.sched_getaffinity(0))
    if not shutil.which("taskset") or len(cpus) < 4:
        return Placement([], [], f"wrk, the workers and the store share the {len(cpus)} CPUs")
    wrk_count = max(1, len(cpus) // 4)
    wrk, server = cpus[-wrk_count:], cpus[:-wrk_count]
    return Placement(wrk, server, f"wrk on CPU {_cpus(wrk)}, the server on {_cpus(server)}")


def _cpus(cpus: list[int]) -> str:
    return ",".join(str(c) for c in cpus)


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
    preflights: int = 0
    pids: tuple[int, int] = (0, 0)  # gunicorn's master and the store's: whose CPU is whose

    def env(self, row: Row) -> dict[str, str]:
        identities = self.identities.get(row.who, [])
        # One request per connection, as the README's nginx sends them (HTTP/1.0 and
        # "Connection: close" to its upstream by default). Over 32 kept-alive connections one
        # gthread worker took 25 of them and ran on one CPU (the GIL) while others idled: the
        # same row measured 450 or 1,050 requests/s depending on who accepted what.
        sent = {"Connection": "close", **row.headers}
        headers = "\n".join(f"{k}: {v}" for k, v in sent.items())
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
            "SR_RACERS": str(RACERS),
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
        """One wrk run of `row`: its counts and latencies, and the CPU a request cost."""
        before = snapshot(*self.pids)
        done = subprocess.run(
            self.wrk_command(row, seconds), env=self.env(row), capture_output=True, text=True
        )
        after = snapshot(*self.pids)
        for line in done.stderr.split("SRBAD ")[1:2]:
            log(f"{row.label}: first unexpected answer: {page_text(line)[:800]}")
        for line in done.stdout.splitlines():
            if line.startswith("SRJSON "):
                result = json.loads(line[len("SRJSON ") :])
                result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
                result["cpu"] = per_request(before, after, result["requests"])
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
            from booking.domain.rules import booking_new_id

            day = self.days[-1].isoformat()
            values = {"token": identities[0][1], "uid": booking_new_id(room=1).split("-", 1)[1]}
            if row.slots in ("distinct", "race"):
                # Each preflight books its own slot (boxes from the top, the runs from the bottom).
                n, self.preflights = self.preflights, self.preflights + 1
                values |= {"room": "001", "date": day, "hour": str(n % 24)}
                values |= {"hour_end": str(n % 24 + 1)}
                values |= {"box": str(FREE_BOX_FIRST + FREE_BOX_COUNT - 1 - n // 24)}
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
