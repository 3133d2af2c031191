"""Facet counts from the book-tags hash: exact, equal to the SINTERCARD path, kept up to date by
every edit, and bypassed (then refilled) on data written before the hash existed."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator

import pytest
import redis
from django.conf import LazySettings

from catalog.demo import load_demo, read_books
from catalog.rules import Book
from catalog.selectors import Query, ResultPage, catalog_page
from catalog.services import book_add, book_delete, book_edit, book_tags_fill, books_load
from strongroom import keyspace
from strongroom.store import round_trips
from tests.catalog_support import assert_catalog_exact, brute_force, stored_books
from tests.store_support import commands_run, stats_reset

TAGS = [f"t{i}" for i in range(12)]
HASH_PATH = {"facet_crossover": 10**9}  # every result counted whole from the book-tags hash
# Every result counted per tag with SINTERCARD (no sample: the counts stay exact).
SINTERCARD_PATH = {"facet_crossover": 0, "facet_sample_reads": 0}


@pytest.fixture
def fast_writes(settings: LazySettings) -> Iterator[None]:
    """Skip the wait for the disk: these tests are about the indexes, not durability."""
    settings.STRONGROOM_DURABILITY = "none"
    yield


def random_books(rng: random.Random, count: int) -> list[Book]:
    """Books with a few random tags each (some with none)."""
    return [
        Book(
            id=f"b{i}",
            title=f"Book {rng.randrange(1000)}",
            author="A. Writer",
            year=rng.randrange(1990, 2026),
            description="",
            tags=tuple(rng.sample(TAGS, rng.randrange(0, 5))),
        )
        for i in range(count)
    ]


def facet_counts(page: ResultPage) -> dict[str, int]:
    return {facet.tag: facet.count for facet in page.facets}


def expected_facets(books: list[Book], query: Query) -> dict[str, int]:
    """Every tag's count within the brute-force result (tags of no result book left out)."""
    return dict(Counter(tag for book in brute_force(books, query) for tag in book.tags))


def random_queries(rng: random.Random, count: int) -> list[Query]:
    queries = [Query(all_of=(tag,)) for tag in TAGS[:3]]
    for _ in range(count):
        queries.append(
            Query(
                all_of=tuple(rng.sample(TAGS, rng.randrange(0, 2))),
                any_of=tuple(rng.sample(TAGS, rng.randrange(0, 3))),
                none_of=tuple(rng.sample(TAGS, rng.randrange(0, 2))),
            )
        )
    return [query for query in queries if query.tags]


def test_both_facet_paths_agree_with_brute_force(r: redis.Redis) -> None:
    rng = random.Random(7)
    books = random_books(rng, 300)
    assert books_load(client=r, books=books) == len(books)
    assert_catalog_exact(r)
    for query in random_queries(rng, 40):
        with round_trips() as trips:
            by_hash = catalog_page(client=r, query=query, **HASH_PATH)
        assert trips.count <= 2
        by_sets = catalog_page(client=r, query=query, **SINTERCARD_PATH)
        assert facet_counts(by_hash) == facet_counts(by_sets) == expected_facets(books, query)
        assert by_hash.total == by_sets.total == len(brute_force(books, query))


def calls_of(client: redis.Redis, *commands: str) -> int:
    ran = commands_run(client)  # every primary's count (a cluster's INFO goes to one node)
    return sum(ran[command] for command in commands)


def test_the_crossover_picks_the_path(r: redis.Redis) -> None:
    books_load(client=r, books=random_books(random.Random(2), 100))

    def counted(query: Query, path: dict[str, int]) -> tuple[int, int]:
        stats_reset(r)
        catalog_page(client=r, query=query, **path)
        return calls_of(r, "hmget"), calls_of(r, "sintercard")

    for query in (Query(any_of=("t0", "t1")), Query(all_of=("t0",))):
        by_hash, by_sets = counted(query, HASH_PATH), counted(query, SINTERCARD_PATH)
        assert by_hash[0] > 0 and by_sets[0] == 0
        assert by_sets[1] > by_hash[1]  # one or more SINTERCARD per facet
    r.hdel(keyspace.CATALOG_BOOK_TAGS.key(), "b1")  # incomplete hash: counted per tag after all
    assert counted(Query(all_of=("t0",)), HASH_PATH)[0] == 0


def test_both_facet_paths_cap_counts_at_the_same_limit(r: redis.Redis) -> None:
    books = random_books(random.Random(3), 200)
    books_load(client=r, books=books)
    query = Query(any_of=tuple(TAGS[:4]))
    by_hash = catalog_page(client=r, query=query, facet_limit=5, **HASH_PATH)
    by_sets = catalog_page(client=r, query=query, facet_limit=5, **SINTERCARD_PATH)
    assert [(f.tag, f.count, f.capped) for f in by_hash.facets] == [
        (f.tag, f.count, f.capped) for f in by_sets.facets
    ]
    assert by_hash.facets and all(f.count <= 5 for f in by_hash.facets)


def test_edits_and_deletes_keep_the_book_tags_hash_exact(r: redis.Redis, fast_writes: None) -> None:
    rng = random.Random(11)
    versions = {}
    for i in range(30):
        tags = rng.sample(TAGS, rng.randrange(0, 4))
        book_id = f"e{i}"
        versions[book_id] = book_add(
            client=r, book_id=book_id, title=f"Edit {i}", author="B", year=2000, tags=tags
        )
    for step in range(60):
        book_id = rng.choice(sorted(versions))
        if rng.random() < 0.25:
            book_delete(client=r, book_id=book_id, expected_version=versions.pop(book_id))
        else:
            tags = rng.sample(TAGS, rng.randrange(0, 5))
            versions[book_id] = book_edit(
                client=r, book_id=book_id, expected_version=versions[book_id],
                token=f"edit-{step}", title=f"Edited {step}", author="B", year=2001, tags=tags,
            )  # fmt: skip
        assert_catalog_exact(r)
        if not versions:
            break
    books = stored_books(r)
    for query in random_queries(rng, 15):
        page = catalog_page(client=r, query=query, **HASH_PATH)
        assert facet_counts(page) == expected_facets(books, query)


def test_data_without_the_hash_falls_back_then_is_filled_once(r: redis.Redis) -> None:
    rng = random.Random(5)
    books = random_books(rng, 120)
    books_load(client=r, books=books)
    # A store written before the book-tags hash existed: no entries at all, or only some.
    r.delete(keyspace.CATALOG_BOOK_TAGS.key())
    r.hset(keyspace.CATALOG_BOOK_TAGS.key(), "b0", '["t0"]')  # not even the right tags
    queries = random_queries(rng, 10)
    for query in queries:
        page = catalog_page(client=r, query=query, **HASH_PATH)
        assert facet_counts(page) == expected_facets(books, query), "must fall back to SINTERCARD"
    r.hset(keyspace.CATALOG_BOOK_TAGS.key(), "gone", '["t1"]')  # a book deleted since
    assert book_tags_fill(client=r) == len(books)  # every entry rewritten, "gone" dropped
    assert book_tags_fill(client=r) == 0  # idempotent: complete already
    r.hdel(keyspace.CATALOG_BOOK_TAGS.key(), "b3")
    assert book_tags_fill(client=r) == len(books)
    assert_catalog_exact(r)
    for query in queries:
        page = catalog_page(client=r, query=query, **HASH_PATH)
        assert facet_counts(page) == expected_facets(books, query)


def test_demo_loader_fills_the_hash_for_books_saved_before_it(r: redis.Redis) -> None:
    load_demo(r)
    demo = read_books()
    r.delete(keyspace.CATALOG_BOOK_TAGS.key())
    lines = load_demo(r)
    assert lines[-1].startswith(f"{len(demo)} books")
    assert r.hlen(keyspace.CATALOG_BOOK_TAGS.key()) == len(demo)
    assert load_demo(r) == lines[:1]  # nothing left to fill
    assert_catalog_exact(r)


def test_counts_without_a_stored_result_match_brute_force_at_a_small_limit(
    r: redis.Redis,
) -> None:
    """Inclusion-exclusion over the tag sets (up to 3 OR and 2 NOT tags), and the result built
    in Lua for more tags, give the brute-force counts, capped where the limit says."""
    rng = random.Random(11)
    books = random_books(rng, 400)
    books_load(client=r, books=books)
    queries = [
        Query(any_of=("t0", "t1", "t2"), none_of=("t3", "t4")),
        Query(all_of=("t0",), any_of=("t1", "t2"), none_of=("t5",)),
        Query(none_of=("t0", "t1")),
        Query(any_of=tuple(TAGS[:7]), none_of=("t8",)),  # too many terms: built in Lua
        Query(all_of=("t1", "t2"), none_of=tuple(TAGS[5:10])),
    ]
    for query in queries:
        for page_number in (1, 3):
            paged = Query(query.all_of, query.any_of, query.none_of, page=page_number)
            for limit in (0, 7):
                page = catalog_page(client=r, query=paged, facet_limit=limit, **SINTERCARD_PATH)
                expected = brute_force(books, paged)
                assert page.total == len(expected), query
                wanted = {
                    tag: min(count, limit) if limit else count
                    for tag, count in expected_facets(books, paged).items()
                }
                assert facet_counts(page) == wanted, (query, limit)
                ids = [book.id for book in expected][(page_number - 1) * 20 : page_number * 20]
                assert [book.id for book in page.books] == ids, query
