"""Profile one page on the site benchmark's data set: `python -m bench.profile_page PATH`.

Loads the same data set as `make bench` into an embedded store in a temporary directory, then
requests PATH through Django's test client in production mode (DEBUG=0, the manifest static
storage) as an anonymous visitor, a buyer or a staff member, and prints pyinstrument's profile
of `--requests` requests, the mean time per request (a separate, unprofiled pass) and the
store round trips per request.

    python -m bench.profile_page '/catalog/?all=web,algorithms' --as buyer
    python -m bench.profile_page /staff/ --as staff --requests 100
"""

from __future__ import annotations

import argparse
import random
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from bench import site, site_data, site_http


@dataclass
class StoreTime:
    total_ms: float
    top: list[tuple[str, float]]


def store_time(client: redis.Redis, requests: int) -> StoreTime:
    """Milliseconds per request the server spent in each command since the last stats reset."""
    stats = client.info("commandstats")
    per_command = sorted(
        (
            (name.removeprefix("cmdstat_"), float(v["usec"]) / requests / 1000)
            for name, v in stats.items()
        ),
        key=lambda row: -row[1],
    )
    return StoreTime(sum(ms for _, ms in per_command), per_command[:6])


@contextmanager
def loaded_site() -> Iterator[tuple[redis.Redis, site_data.DataSet]]:
    """Django in production mode on an embedded store in a temporary directory, loaded with the
    site benchmark's data set: (the store client, the data set); everything goes at the end."""
    data_dir = Path(tempfile.mkdtemp(prefix="sr-bench-profile-"))
    try:
        site.configure(data_dir, secrets.token_urlsafe(40))
        from django.conf import settings
        from django.core.management import call_command

        from strongroom import store

        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
        call_command("collectstatic", interactive=False, verbosity=0)
        client = store.get_store()
        yield client, site_data.load_data(client, random.Random(20261201))
    finally:
        from strongroom import embedded

        embedded.stop(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


def web_client(client: redis.Redis, person: Any, *, htmx: bool = False, csrf: bool = False) -> Any:
    """Django's test client, signed in as `person` (None: anonymous); `csrf`: its POSTs are
    checked for the CSRF token as a browser's are."""
    from django.test import Client

    web = Client(headers={"HX-Request": "true"} if htmx else {}, enforce_csrf_checks=csrf)
    if person is not None:
        name, value = site_http.session_cookie(client, person).split("=", 1)
        web.cookies[name] = value
    return web


def main(argv: list[str] | None = None) -> int:
    """Load the data set, then profile PATH."""
    parser = argparse.ArgumentParser(prog="python -m bench.profile_page", description=__doc__)
    parser.add_argument("path")
    parser.add_argument("--as", dest="who", choices=("anonymous", "buyer", "staff"))
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--htmx", action="store_true", help="send HX-Request: true")
    parser.add_argument("--flat", action="store_true", help="a flat profile (self time)")
    args = parser.parse_args(argv)

    with loaded_site() as (client, data):
        from pyinstrument import Profiler

        from strongroom import store

        who = args.who or "anonymous"
        person = None if who == "anonymous" else data.staff if who == "staff" else data.buyers[0]
        web = web_client(client, person, htmx=args.htmx)
        first = web.get(args.path)
        if first.status_code != 200:
            print(f"GET {args.path} answered {first.status_code}", file=sys.stderr)
            return 1
        for _ in range(20):
            web.get(args.path)
        with store.round_trips() as trips:
            web.get(args.path)
        client.config_resetstat()
        started = time.perf_counter()
        for _ in range(args.requests):
            web.get(args.path)
        mean_ms = (time.perf_counter() - started) / args.requests * 1000
        server = store_time(client, args.requests)
        profiler = Profiler(interval=0.0005)
        profiler.start()
        for _ in range(args.requests):
            web.get(args.path)
        profiler.stop()
        print(profiler.output_text(unicode=True, color=False, flat=args.flat))
        print(
            f"{args.path}: {mean_ms:.2f} ms per request (unprofiled), {trips.count} round trips,"
            f" {len(first.content):,} bytes of HTML"
        )
        print(f"of which the store's own time (INFO commandstats): {server.total_ms:.2f} ms")
        for name, ms in server.top:
            print(f"  {name:<32} {ms:6.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
