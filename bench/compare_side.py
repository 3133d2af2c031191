"""One side of `make bench` (bench/compare.py): the site of one source tree, served and loaded.

Run by bench/compare.py with the tree as its working directory (`python -m bench.compare_side
DATA_DIR OUT.json`): starts an embedded store in DATA_DIR, loads the site benchmark's data set
(the same seed on both sides), serves the tree's site with gunicorn, writes what the load
generator needs (address, identities, rows, pids) to OUT.json, then waits until its standard
input closes and stops everything it started. A tree that predates this file gets a copy of it.
"""

from __future__ import annotations

import json
import random
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

# The rows `make bench` compares (labels as bench/site_rows.py names them, matched by prefix).
COMPARED = (
    "reference: base template, signed in",
    "booking page",
    "calendar fragment",
    "booking POST, distinct",
    "booking POST, 8 buyers race",
    "building map (class C",
    "account page",
)


def compared_rows(rows: list[Any]) -> list[dict[str, Any]]:
    """The rows compared, in COMPARED's order, as plain data (no twins, no results)."""
    chosen = []
    for prefix in COMPARED:
        for row in rows:
            if row.label.startswith(prefix) and not row.label.endswith("again"):
                found = {k: v for k, v in asdict(row).items() if k not in ("twin", "render")}
                found.pop("result", None)
                chosen.append(found)
                break
    return chosen


def mail_drained(client: Any, limit_s: float = 300.0) -> float:
    """Wait until the served site's senders have worked through the mail the data set queued
    (a receipt per booking loaded, about 10,000): otherwise they do it during the first rows,
    and in `make bench` one side's backlog lands in the other side's measurement. Returns the
    seconds waited. Here, not in bench/site_http.py, as this file also runs in older trees."""
    from strongroom.outbox import outbox_pending

    started = time.monotonic()
    while outbox_pending(client=client, limit=1):
        if time.monotonic() - started > limit_s:
            raise RuntimeError(f"the data set's mail was not sent within {limit_s:.0f} s")
        time.sleep(0.5)
    return time.monotonic() - started


def main(argv: list[str]) -> int:
    data_dir, out = Path(argv[0]), Path(argv[1])
    workers, threads = int(argv[2]), int(argv[3])
    from bench.site import configure
    from bench.site_common import POSTING_BUYERS
    from bench.site_data import load_data
    from bench.site_http import csrf_identity, serve, session_cookie
    from bench.site_rows import build_rows

    server: subprocess.Popen[bytes] | None = None
    try:
        env = configure(data_dir, secrets.token_urlsafe(40))
        from django.conf import settings

        from strongroom import embedded, store

        client = store.get_store()
        data = load_data(client, random.Random(20261201))
        # threads 0: a tree whose workers have none (gevent, since 2026-11-28); an older tree's
        # serve takes the threads of its gthread workers too.
        older: Any = serve
        server, base = older(env, workers, threads) if threads else serve(env, workers)
        mail_drained(client)
        cookies = [session_cookie(client, b) for b in data.buyers[:POSTING_BUYERS]]
        # Any page of the site carries a form (the language switch) and its CSRF cookie; the
        # login page sends someone signed in on.
        csrf_page = "/"
        identities = {
            "anonymous": [],
            "buyer": [csrf_identity(base, c, csrf_page) for c in cookies],
            "staff": [csrf_identity(base, session_cookie(client, data.staff), csrf_page)],
        }
        side = {
            "base": base,
            "identities": identities,
            "days": [d.isoformat() for d in data.bookable_days],
            "rooms": settings.STRONGROOM_ROOM_COUNT,
            "pids": [server.pid, embedded.server_pid(data_dir) or 0],
            "rows": compared_rows(build_rows(data)),
        }
        partial = out.with_suffix(".part")
        partial.write_text(json.dumps(side), encoding="utf-8")
        partial.rename(out)  # the parent sees the whole file or none
        sys.stdin.read()  # served until the parent closes our input (or dies)
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
