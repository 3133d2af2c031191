"""Catalog benchmark: `python -m bench.catalog [--books N] [--tags T] [--queries Q]`.

Runs on its own embedded Valkey in a temporary directory (never the site's data). Loads N
generated books (default 100,000) carrying 1-6 of T tags (default 500) drawn with Zipf-like
popularity, through the same server-side function staff edits use (pipelined), then times
whole result pages (filter + sort + page + facet counts: the two round trips a visitor's
request makes) for 1, 2 and 3-tag queries, and prints p50 / p99 latency per query shape.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "strongroom.settings")
os.environ.setdefault("DEBUG", "1")

import django

django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402

from catalog.rules import Book  # noqa: E402
from catalog.selectors import Query, catalog_page  # noqa: E402
from catalog.services import books_load  # noqa: E402
from strongroom import embedded, store  # noqa: E402

WORDS = [
    "art", "code", "data", "deep", "design", "distributed", "effective", "elements",
    "functional", "guide", "hacking", "introduction", "language", "learning", "modern",
    "practical", "principles", "programming", "real", "structure", "systems", "theory",
    "thinking", "web", "world", "compilers", "networks", "patterns", "algorithms", "secure",
]  # fmt: skip


def zipf_weights(count: int, exponent: float = 1.0) -> list[float]:
    """Popularity of tag rank 1..count: the k-th most used tag is used about 1/k as often."""
    return [1 / (rank**exponent) for rank in range(1, count + 1)]


def generate_books(count: int, tags: list[str], seed: int) -> list[Book]:
    rng = random.Random(seed)
    weights = zipf_weights(len(tags))
    books = []
    for number in range(count):
        wanted = rng.randint(1, 6)
        chosen: list[str] = []
        while len(chosen) < wanted:
            tag = rng.choices(tags, weights)[0]
            if tag not in chosen:
                chosen.append(tag)
        title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5))).title()
        books.append(
            Book(
                id=f"bench{number}",
                title=f"{title} {number}",
                author="Generated Author",
                year=rng.randint(1950, 2025),
                description="",
                tags=tuple(chosen),
            )
        )
    return books


def shapes(tags: list[str]) -> list[tuple[str, Callable[[random.Random], Query]]]:
    """Query shapes; tags are picked by popularity, as visitors click popular facets more."""
    weights = zipf_weights(len(tags))

    def pick(rng: random.Random, count: int) -> list[str]:
        chosen: list[str] = []
        while len(chosen) < count:
            tag = rng.choices(tags, weights)[0]
            if tag not in chosen:
                chosen.append(tag)
        return chosen

    def top(rng: random.Random) -> Query:
        return Query(all_of=(tags[0],))

    def and_not(rng: random.Random) -> Query:
        first, second = pick(rng, 2)
        return Query(all_of=(first,), none_of=(second,))

    def and_or_not(rng: random.Random) -> Query:
        first, second, third = pick(rng, 3)
        return Query(all_of=(first,), any_of=(second,), none_of=(third,))

    return [
        ("no tag (all books)", lambda rng: Query()),
        ("1 tag", lambda rng: Query(all_of=tuple(pick(rng, 1)))),
        ("1 tag, by year", lambda rng: Query(all_of=tuple(pick(rng, 1)), sort="-year")),
        ("1 tag: the most used", top),
        ("2 tags AND", lambda rng: Query(all_of=tuple(pick(rng, 2)))),
        ("2 tags OR", lambda rng: Query(any_of=tuple(pick(rng, 2)))),
        ("1 AND 1 NOT", and_not),
        ("3 tags AND", lambda rng: Query(all_of=tuple(pick(rng, 3)))),
        ("3 tags OR", lambda rng: Query(any_of=tuple(pick(rng, 3)))),
        ("1 AND 1 OR 1 NOT", and_or_not),
        ("3 tags OR, page 50", lambda rng: Query(any_of=tuple(pick(rng, 3)), page=50)),
    ]  # fmt: skip


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def measure(
    client: redis.Redis, make: Callable[[random.Random], Query], queries: int, budget: int
) -> tuple[list[float], list[int], int, float]:
    rng = random.Random(7)
    timings: list[float] = []
    sizes: list[int] = []
    trips = 0
    facets = 0
    for _ in range(queries):
        query = make(rng)
        with store.round_trips() as tally:
            start = time.perf_counter()
            result = catalog_page(client=client, query=query, facet_budget=budget)
            timings.append((time.perf_counter() - start) * 1000)
        trips = max(trips, tally.count)
        sizes.append(result.total)
        facets += len(result.facets)
    return timings, sizes, trips, facets / queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--books", type=int, default=100_000)
    parser.add_argument("--tags", type=int, default=500)
    parser.add_argument("--queries", type=int, default=300, help="per query shape")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="sr-bench-catalog-"))
    try:
        client = store.connect(embedded.ensure_running(data_dir))
        # Loading sends 2,000 books a pipeline: more than the site's 1.5 s command timeout
        # allows on a busy machine. Queries are timed by the clock here, not by the timeout.
        client.connection_pool.connection_kwargs["socket_timeout"] = 60
        store.load_functions(client)
        tags = [f"tag-{rank:03d}" for rank in range(1, args.tags + 1)]
        books = generate_books(args.books, tags, seed=1)
        start = time.perf_counter()
        books_load(client=client, books=books, chunk=2000)
        load_s = time.perf_counter() - start
        memberships = sum(len(book.tags) for book in books)
        info = client.info("memory")
        print(
            f"catalog: {args.books:,} books, {args.tags} tags (Zipf), {memberships:,} tag "
            f"memberships; loaded in {load_s:.1f} s ({args.books / load_s:,.0f} books/s, "
            f"one FCALL per book, pipelined); used memory {info['used_memory_human']}"
        )
        budget = settings.CATALOG_FACET_BUDGET
        print(
            f"result page = filter + sort + {settings.CATALOG_PAGE_SIZE} books + facet counts "
            f"(SINTERCARD LIMIT {settings.CATALOG_FACET_LIMIT} per tag, most used tags first "
            f"within a budget of {budget:,} estimated checks); {args.queries} queries per row"
        )
        header = (
            f"{'query':<22} {'mean hits':>9} {'trips':>5} {'facets':>6} {'p50 ms':>7}"
            f" {'p99 ms':>7} | {'budget/5: facets':>16} {'p50':>6} {'p99':>6}"
            f" | {'no facets: p50':>14} {'p99':>6}"
        )
        print(header)
        print("-" * len(header))
        for name, make in shapes(tags):
            full, sizes, trips, facets = measure(client, make, args.queries, budget)
            few, _, _, few_facets = measure(client, make, args.queries, budget // 5)
            bare, _, _, _ = measure(client, make, args.queries, 0)
            print(
                f"{name:<22} {statistics.mean(sizes):>9,.0f} {trips:>5} {facets:>6.0f}"
                f" {percentile(full, 0.5):>7.2f} {percentile(full, 0.99):>7.2f}"
                f" | {few_facets:>16.0f} {percentile(few, 0.5):>6.2f} {percentile(few, 0.99):>6.2f}"
                f" | {percentile(bare, 0.5):>14.2f} {percentile(bare, 0.99):>6.2f}"
            )
        print(
            "facets = tags counted on average; 'no facets' counts only the query's own tags; "
            f"the unfiltered page uses the tag counts kept by every edit. Load average at the "
            f"end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )
    finally:
        embedded.stop(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
