"""Accounts figures: round trips and time of the login and visit writes and the dashboard reads.

Run: `DEBUG=1 .venv/bin/python -m bench.accounts_bench` (an embedded store in a temporary
directory; nothing of yours is touched). Prints a Markdown table.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def setup() -> Path:
    data_dir = tempfile.mkdtemp(prefix="sr-bench-accounts-")
    os.environ.setdefault("DEBUG", "1")
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ["STRONGROOM_DATA_DIR"] = data_dir
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "strongroom.settings")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import django

    django.setup()
    return Path(data_dir)


def measure(name: str, action: Callable[[int], object], n: int) -> tuple[str, float, float, int]:
    """Median and p99 microseconds per call, and round trips per call."""
    from strongroom.store import round_trips

    times = []
    with round_trips() as trips:
        for i in range(n):
            start = time.perf_counter()
            action(i)
            times.append((time.perf_counter() - start) * 1e6)
    times.sort()
    return name, statistics.median(times), times[int(len(times) * 0.99) - 1], trips.count // n


def main() -> None:
    data_dir = setup()
    try:
        run()
    finally:
        from strongroom import embedded, store

        store.reset_store()
        embedded.stop(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


def run() -> None:
    from django.contrib.auth.hashers import make_password
    from django.test import Client

    from accounts import selectors, services, visits
    from strongroom.store import get_store

    client = get_store()
    client.flushall()
    encoded = make_password("bench-password-1")
    people = [
        services.person_register(client=client, username=f"bench{i}", password_hash=encoded)
        for i in range(200)
    ]
    day = dt.date.today()
    rows = [
        measure(
            "sign-up (person_register, hashed)",
            lambda i: services.person_register(
                client=client, username=f"new{i}", password_hash=encoded
            ),
            500,
        ),
        measure(
            "login record (MULTI: HINCRBY, HSET, LPUSH, LTRIM, ZINCRBY)",
            lambda i: services.login_record(client=client, person_id=people[i % 200].id),
            5000,
        ),
        measure(
            "visit record (INCR, EXPIRE, PFADD, EXPIRE)",
            lambda i: visits.visit_record(client=client, day=day, visitor=f"p:{i}"),
            5000,
        ),
        measure(
            "recent 100 logins with names",
            lambda i: selectors.logins_recent(client=client, limit=100),
            1000,
        ),
        measure(
            "top 10 by logins with names",
            lambda i: selectors.logins_top(client=client, limit=10),
            1000,
        ),
        measure(
            "one person's count and last login",
            lambda i: selectors.login_summary(client=client, person_id=people[i % 200].id),
            1000,
        ),
        measure(
            "visits for 30 days",
            lambda i: selectors.visits_by_day(
                client=client, start=day - dt.timedelta(days=29), end=day
            ),
            1000,
        ),
    ]
    web = Client(REMOTE_ADDR="203.0.113.1", HTTP_USER_AGENT="bench")
    rows.append(measure("page view, anonymous (GET /)", lambda i: web.get("/"), 300))
    signed_in = Client()
    signed_in.post("/accounts/login/", {"username": "bench0", "password": "bench-password-1"})
    rows.append(measure("page view, signed in (GET /)", lambda i: signed_in.get("/"), 300))
    rows.append(
        measure(
            "login request (POST, PBKDF2 check included)",
            lambda i: Client().post(
                "/accounts/login/", {"username": f"bench{i % 200}", "password": "bench-password-1"}
            ),
            20,
        )
    )
    print("| operation | median µs | p99 µs | round trips |")
    print("|---|---:|---:|---:|")
    for name, median, p99, trips in rows:
        print(f"| {name} | {median:.0f} | {p99:.0f} | {trips} |")


if __name__ == "__main__":
    main()
