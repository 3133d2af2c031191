"""Cold catalog queries: `python -m bench.catalog_cold [--books N] [--tags T] [--queries Q]`.

Every query is one nobody asked before (no kept page helps): the first page and the facet
counts the catalog page shows, for AND, OR, OR + NOT and AND + NOT shapes with popular and with
rare tags, on its own embedded Valkey in a temporary directory loaded with N generated books
(default 100,000; 1-6 of T tags each, T default 500, drawn Zipf-like: a few tags on many
books, many rare ones). Per shape it prints p50 / p99 of

- the page end to end through the selector a visitor's request calls (`result_page`: the
  edition read, the query, the books and the facet counts), in the benchmark's process;
- the store's own time for the page's functions (`catalog_query` + `catalog_facets`), read
  from SLOWLOG with every command logged, so client and socket costs are left out.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bench.catalog import generate_books, percentile
from catalog import selectors
from catalog.selectors import Query, result_page
from catalog.services import books_load
from strongroom import embedded, keyspace, store

if TYPE_CHECKING:
    import redis

# Tag ranks by popularity (1 = the most used): "common" tags are on thousands of books each,
# "rare" ones on a few dozen to a few hundred.
COMMON = range(1, 26)
RARE = range(200, 501)
SORTS = ("title", "year", "-year")

Maker = Callable[[random.Random], Query]


def shapes(tags: list[str]) -> list[tuple[str, Maker]]:
    """The query shapes: (name, a function making one query of that shape)."""

    def pick(
        rng: random.Random, ranks: range, count: int, taken: tuple[str, ...] = ()
    ) -> tuple[str, ...]:
        chosen: list[str] = []
        while len(chosen) < count:
            tag = tags[min(len(tags), rng.choice(ranks)) - 1]
            if tag not in chosen and tag not in taken:
                chosen.append(tag)
        return tuple(chosen)

    def shape(and_: tuple[range, ...], or_: tuple[range, ...], not_: tuple[range, ...]) -> Maker:
        def make(rng: random.Random) -> Query:
            picked: tuple[str, ...] = ()
            groups: list[tuple[str, ...]] = []
            for ranks_of_group in (and_, or_, not_):
                group: tuple[str, ...] = ()
                for ranks in ranks_of_group:
                    group += pick(rng, ranks, 1, picked + group)
                picked += group
                groups.append(group)
            all_of, any_of, none_of = groups
            return Query(all_of, any_of, none_of, sort=rng.choice(SORTS))

        return make

    c, r = COMMON, RARE
    return [
        ("2 AND, common", shape((c, c), (), ())),
        ("2 AND, common + rare", shape((c, r), (), ())),
        ("2 OR, common", shape((), (c, c), ())),
        ("3 OR, common", shape((), (c, c, c), ())),
        ("3 OR, rare", shape((), (r, r, r), ())),
        ("2 OR + NOT, common", shape((), (c, c), (c,))),
        ("2 OR + NOT, rare OR", shape((), (r, r), (c,))),
        ("3 OR + NOT, common", shape((), (c, c, c), (c,))),
        ("AND + NOT, common", shape((c,), (), (c,))),
        ("AND + NOT, rare AND", shape((r,), (), (c,))),
        ("AND + OR + NOT, common", shape((c,), (c, c), (c,))),
        ("2 NOT only, common", shape((), (), (c, c))),
    ]


def store_ms(client: redis.Redis) -> dict[str, float]:
    """The store's time (ms) per catalog function logged since the last SLOWLOG RESET."""
    spent: dict[str, float] = {}
    for entry in client.slowlog_get(-1):
        words = [w.decode() if isinstance(w, bytes) else w for w in entry["command"].split()[:2]]
        if len(words) == 2 and words[0].upper().startswith("FCALL"):
            spent[words[1]] = spent.get(words[1], 0.0) + int(entry["duration"]) / 1000
    return spent


def server_cpu_ms(client: redis.Redis) -> float:
    """The store process's CPU time so far (ms): unlike its clock time, not lengthened when
    other processes of a busy machine take the CPU."""
    cpu = client.info("cpu")
    return (float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])) * 1000


class Timings:
    """One shape's measurements: end to end, in the store, and per function; result sizes."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.store: list[float] = []
        self.query: list[float] = []
        self.facets: list[float] = []
        self.cpu: list[float] = []
        self.sizes: list[int] = []


def measure(client: redis.Redis, make: Maker, queries: int, seen: set[Query], seed: int) -> Timings:
    """The timings of `queries` queries of one shape, each one never asked before."""
    rng = random.Random(seed)
    timings = Timings()
    tries = 0
    while len(timings.wall) < queries and tries < 100 * queries:
        tries += 1
        query = make(rng)
        if query in seen:  # (a shape with few distinct queries stops at those)
            continue
        seen.add(query)
        client.slowlog_reset()
        cpu = server_cpu_ms(client)
        start = time.perf_counter()
        page = result_page(client=client, query=query)
        timings.wall.append((time.perf_counter() - start) * 1000)
        timings.cpu.append(server_cpu_ms(client) - cpu)
        spent = store_ms(client)
        timings.store.append(sum(spent.values()))
        timings.query.append(spent.get("catalog_query", 0.0))
        timings.facets.append(spent.get("catalog_facets", 0.0))
        timings.sizes.append(page.total)
    return timings


def load(client: redis.Redis, books_wanted: int, tags: list[str]) -> str:
    """Load the generated books unless the store holds them already; a line saying so."""
    if client.scard(keyspace.CATALOG_BOOKS.key()) == books_wanted:
        return "catalog kept from an earlier run"
    books = generate_books(books_wanted, tags, seed=1)
    start = time.perf_counter()
    books_load(client=client, books=books, chunk=2000)
    return f"loaded in {time.perf_counter() - start:.0f} s"


def row(name: str, t: Timings) -> str:
    cells = [
        f"{sum(t.sizes) / len(t.sizes):,.0f}",
        *(f"{percentile(values, q):.2f}" for values in (t.wall, t.store) for q in (0.5, 0.99)),
        *(f"{percentile(values, 0.99):.2f}" for values in (t.query, t.facets)),
        *(f"{percentile(t.cpu, q):.2f}" for q in (0.5, 0.99)),
    ]
    return f"| {name} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--books", type=int, default=100_000)
    parser.add_argument("--tags", type=int, default=500)
    parser.add_argument("--queries", type=int, default=200, help="per query shape")
    parser.add_argument("--only", default="", help="only the shapes whose name has this")
    parser.add_argument(
        "--data", type=Path, help="keep the store in this directory (reused by the next run)"
    )
    # (getattr: the same file also measures a tree from before these settings existed.)
    for name in ("EXACT_SIZE_COST", "FACET_SAMPLE_READS", "FACET_SAMPLE"):
        parser.add_argument(f"--{name.lower().replace('_', '-')}", type=int,
                            default=getattr(selectors, name, None))  # fmt: skip
    args = parser.parse_args()
    for name in ("EXACT_SIZE_COST", "FACET_SAMPLE_READS", "FACET_SAMPLE"):
        if getattr(args, name.lower()) is not None:
            setattr(selectors, name, getattr(args, name.lower()))

    data_dir = args.data or Path(tempfile.mkdtemp(prefix="sr-bench-catalog-cold-"))
    try:
        client = store.connect(embedded.ensure_running(data_dir))
        client.connection_pool.connection_kwargs["socket_timeout"] = 60
        store.load_functions(client)
        tags = [f"tag-{rank:03d}" for rank in range(1, args.tags + 1)]
        loaded = load(client, args.books, tags)
        counts = [count for _name, count in selectors.tags_with_counts(client=client)]
        print(
            f"catalog: {args.books:,} books, {args.tags} tags (Zipf), {loaded}; common tags "
            f"(ranks {COMMON.start}-{COMMON.stop - 1}) on {counts[COMMON.stop - 2]:,}"
            f"-{counts[0]:,} books, rare (ranks {RARE.start}-{RARE.stop - 1}) on "
            f"{counts[min(len(counts), RARE.stop - 1) - 1]:,}-{counts[RARE.start - 1]:,}"
        )
        client.config_set("slowlog-log-slower-than", 0)
        client.config_set("slowlog-max-len", 100_000)
        selectors.KEPT_PAGES.clear()
        print(f"{args.queries} distinct never-asked queries per shape, page 1 + facets; ms")
        print(
            "| query shape | mean hits | end-to-end p50 | p99 | store p50 | p99 "
            "| catalog_query p99 | catalog_facets p99 | store CPU p50 | p99 |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        seen: set[Query] = set()
        for number, (name, make) in enumerate(shapes(tags)):
            if args.only in name:
                print(row(name, measure(client, make, args.queries, seen, seed=number)), flush=True)
        print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    finally:
        if args.data is None:
            embedded.stop(data_dir)
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
