"""What anonymous catalog pages write: `python -m bench.read_writes [--queries N]`.

Runs on its own embedded Valkey in a temporary directory (AOF on, as `make run`), loads the
demo catalog, then serves N anonymous catalog queries in-process (Django's test client, each a
new visitor) and prints how much the append-only file grew, next to the growth of N visits of a
page that reads nothing from the catalog: the difference is what the catalog queries wrote.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "strongroom.settings")
os.environ.setdefault("DEBUG", "1")

import django

django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from catalog.demo import load_demo  # noqa: E402
from catalog.selectors import tags_with_counts  # noqa: E402
from strongroom import embedded, store  # noqa: E402


def aof_size(client: redis.Redis) -> int:
    return int(client.info("persistence")["aof_current_size"])


def growth(client: redis.Redis, paths: list[str]) -> int:
    before = aof_size(client)
    for path in paths:
        answer = Client().get(path)
        assert answer.status_code == 200, (path, answer.status_code)
    return aof_size(client) - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="sr-bench-reads-"))
    try:
        settings.REDIS_URL = embedded.ensure_running(data_dir)
        settings.ALLOWED_HOSTS = ["testserver"]
        setup_test_environment()
        store.reset_store()
        client = store.get_store()
        load_demo(client)
        tags = [name for name, _ in tags_with_counts(client=client, limit=40)]
        rng = random.Random(5)
        queries = []
        for _ in range(args.queries):
            a, b, c = rng.sample(tags, 3)
            queries.append(rng.choice([
                f"/catalog/?all={a}", f"/catalog/?all={a}&all={b}", f"/catalog/?any={a}&any={b}",
                f"/catalog/?all={a}&not={b}", f"/catalog/?all={a}&any={b}&any={c}&sort=-year",
                f"/catalog/?any={a}&any={b}&not={c}&page=2",
            ]))  # fmt: skip
        visits_only = growth(client, ["/accounts/login/"] * args.queries)
        catalog = growth(client, queries)
        print(
            f"append-only file growth: {args.queries} anonymous catalog queries {catalog:,} bytes "
            f"({catalog / args.queries:,.0f} per GET); {args.queries} visits of the login page "
            f"{visits_only:,} bytes ({visits_only / args.queries:,.0f} per GET); difference "
            f"{catalog - visits_only:+,} bytes"
        )
    finally:
        store.reset_store()
        embedded.stop(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
