"""Browse queries (AND / OR / NOT, sorting, paging, facets) against a brute-force answer."""

from __future__ import annotations

from typing import Any

import redis
from hypothesis import given
from hypothesis import strategies as st

from catalog.rules import Book
from catalog.selectors import Query, catalog_page
from catalog.services import books_load
from strongroom.store import round_trips
from tests.catalog_support import add, brute_force, store_examples, stored_books
from tests.catalog_support import query_strategy as catalog_query_strategy

TAGS = ["ruby", "web", "erlang", "a:b", "{x}", "*", "with space", "机器学习", "🙂", "c++"]
WORDS = ["alpha", "Beta", "gamma", "Delta", "epsilon", "zeta", "Eta", "theta", "iota", "kappa"]

books_strategy = st.lists(
    st.tuples(
        st.sampled_from(WORDS),
        st.integers(min_value=1950, max_value=2025),
        st.lists(st.sampled_from(TAGS), unique=True, max_size=5),
    ),
    max_size=25,
)
query_strategy = catalog_query_strategy(TAGS)
SLOW_OK = store_examples(150)


def load(r: redis.Redis, rows: list[tuple[str, int, list[str]]]) -> list[Book]:
    r.flushall()
    books = [
        # Titles are distinct (a number per book) so that every order is fully determined.
        Book(id=f"b{i}", title=f"{word} {i:03d}", author="X", year=year, description="",
             tags=tuple(tags))
        for i, (word, year, tags) in enumerate(rows)
    ]  # fmt: skip
    books_load(client=r, books=books)
    return books


def all_pages(r: redis.Redis, query: Query, size: int) -> tuple[list[str], int]:
    ids: list[str] = []
    page = 1
    while True:
        result = catalog_page(
            client=r, query=Query(query.all_of, query.any_of, query.none_of, query.sort, page),
            page_size=size,
        )  # fmt: skip
        ids += [book.id for book in result.books]
        if page >= result.pages:
            return ids, result.total
        page += 1


@SLOW_OK
@given(rows=books_strategy, query=query_strategy, size=st.integers(min_value=1, max_value=7))
def test_and_or_not_pages_equal_the_brute_force_answer(
    r: redis.Redis, rows: list[tuple[str, int, list[str]]], query: Query, size: int
) -> None:
    books = load(r, rows)
    expected = [book.id for book in brute_force(books, query)]
    ids, total = all_pages(r, query, size)
    assert total == len(expected)
    assert ids == expected


@SLOW_OK
@given(rows=books_strategy, query=query_strategy)
def test_facets_count_the_books_of_the_result_that_carry_each_tag(
    r: redis.Redis, rows: list[tuple[str, int, list[str]]], query: Query
) -> None:
    books = load(r, rows)
    result_books = brute_force(books, query)
    expected: dict[str, int] = {}
    for book in result_books:
        for tag in book.tags:
            expected[tag] = expected.get(tag, 0) + 1
    result = catalog_page(client=r, query=query, facet_limit=0)
    assert {facet.tag: facet.count for facet in result.facets} == expected
    assert not any(facet.capped for facet in result.facets)
    assert sorted(result.unknown) == sorted(
        tag for tag in query.tags if tag not in {t for b in books for t in b.tags}
    )


def test_the_domain_example_and_or_not(r: redis.Redis) -> None:
    add(r, "trpl", "The Ruby Programming Language", 2008, "ruby")
    add(r, "ror", "Ruby on Rails", 2006, "ruby", "web")
    add(r, "erl", "Programming Erlang", 2007, "erlang")

    def titles(**groups: Any) -> list[str]:
        return [book.title for book in catalog_page(client=r, query=Query(**groups)).books]

    assert titles(all_of=("ruby", "web")) == ["Ruby on Rails"]
    assert titles(all_of=("ruby",), none_of=("web",)) == ["The Ruby Programming Language"]
    assert titles(any_of=("ruby", "web")) == ["Ruby on Rails", "The Ruby Programming Language"]
    assert titles(none_of=("ruby",)) == ["Programming Erlang"]


def test_big_facet_counts_are_capped_and_marked(r: redis.Redis) -> None:
    for i in range(5):
        add(r, f"b{i}", f"Book {i}", 2000 + i, "common", "x" if i % 2 else "y")
    result = catalog_page(client=r, query=Query(all_of=("common",)), facet_limit=2)
    facets = {facet.tag: facet for facet in result.facets}
    assert facets["common"].count == 2 and facets["common"].capped
    assert facets["x"].count == 2 and facets["x"].capped  # x has exactly 2: at the cap
    assert facets["y"].count == 2 and facets["y"].capped


def test_facets_cover_only_the_most_used_tags_when_asked(r: redis.Redis) -> None:
    add(r, "a", "A", 2000, "big", "small")
    add(r, "b", "B", 2001, "big")
    result = catalog_page(client=r, query=Query(any_of=("big",)), facet_tags=1)
    assert [facet.tag for facet in result.facets] == ["big"]


def test_a_result_page_costs_two_round_trips_whatever_its_size_and_tags(r: redis.Redis) -> None:
    tags = [f"tag{i}" for i in range(20)]
    for i in range(120):
        carried = tags[:7] if i % 3 else []
        carried += tags[7 + i % 7 : 8 + i % 7]
        carried += tags[14:] if i % 10 == 0 else []
        add(r, f"b{i}", f"Book {i}", 1990 + i % 30, *carried)
    query = Query(all_of=tuple(tags[:7]), any_of=tuple(tags[7:14]), none_of=tuple(tags[14:]))
    for size in (1, 20, 100):
        with round_trips() as trips:
            result = catalog_page(client=r, query=query, page_size=size)
        assert trips.count == 2
        assert result.total > 0 and len(result.books) == min(size, result.total)
    with round_trips() as trips:
        catalog_page(client=r, query=Query(page=3))
    assert trips.count == 2


def test_scratch_keys_are_gone_after_a_page_and_expire_anyway(r: redis.Redis) -> None:
    add(r, "a", "A", 2000, "x", "y")
    add(r, "b", "B", 2001, "y")
    before = set(r.keys("*"))
    catalog_page(client=r, query=Query(all_of=("y",), none_of=("x",)))
    assert set(r.keys("*")) == before
    assert [book.id for book in stored_books(r)]


def test_a_page_past_the_end_is_empty_and_says_how_many_pages(r: redis.Redis) -> None:
    for i in range(3):
        add(r, f"b{i}", f"Book {i}", 2000, "x")
    result = catalog_page(client=r, query=Query(all_of=("x",), page=5), page_size=2)
    assert result.books == [] and result.total == 3 and result.pages == 2
    assert result.page_out_of_range


def test_dense_results_walk_the_order_and_sparse_ones_intersect_it_with_the_same_answer(
    r: redis.Redis,
) -> None:
    # "dense" is on 30 of 40 books (the page is found by walking the sort order), "sparse"
    # on 3 (the result is intersected with the order); both must agree with brute force.
    rows = [
        (WORDS[i % len(WORDS)], 2000 + i % 4, ["dense"] * (i % 4 != 0) + ["sparse"] * (i % 13 == 1))
        for i in range(40)
    ]
    books = load(r, rows)
    for tag in ("dense", "sparse"):
        for sort in ("title", "year", "-year"):
            query = Query(all_of=(tag,), sort=sort)
            ids, _total = all_pages(r, query, 4)
            assert ids == [book.id for book in brute_force(books, query)], (tag, sort)


def test_a_small_facet_budget_counts_fewer_tags_but_always_the_querys_own(r: redis.Redis) -> None:
    for i in range(30):
        add(r, f"b{i}", f"Book {i}", 2000, "big", *(["mid"] if i % 2 else []), f"own{i % 3}")
    query = Query(all_of=("big",), any_of=("own2",))
    generous = catalog_page(client=r, query=query, facet_budget=10_000)
    assert {f.tag: f.count for f in generous.facets} == {"big": 10, "own2": 10, "mid": 5}
    stingy = catalog_page(client=r, query=query, facet_budget=0)
    assert {f.tag: f.count for f in stingy.facets} == {"big": 10, "own2": 10}
