"""Never-asked queries stay cheap: a result's size and facets come from walking its driving
tag sets (exact when the walk reads them whole, else an even sample, marked as estimates), and
every page still equals the brute-force answer."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import redis
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from catalog import selectors
from catalog.rules import Book
from catalog.selectors import Query, catalog_page
from catalog.services import books_load
from tests.catalog_support import brute_force, store_examples
from tests.catalog_support import query_strategy as catalog_query_strategy
from tests.store_support import commands_run, stats_reset

TAGS = ["ruby", "web", "erlang", "a:b", "{x}", "机器学习", "c++", "go"]
books_strategy = st.lists(
    st.tuples(
        st.integers(min_value=1950, max_value=2025),
        st.lists(st.sampled_from(TAGS), unique=True, max_size=5),
    ),
    max_size=30,
)
query_strategy = catalog_query_strategy(TAGS)
SLOW_OK = store_examples(80)
# Never the exact size by SINTERCARD: always walk, and read every member (exact) ...
WALK_WHOLE = {"exact_size_cost": 0, "facet_sample_reads": 10**6}
# ... or only a few (estimates).
WALK_FEW = {"exact_size_cost": 0, "facet_sample_reads": 4, "facet_crossover": 2}


def load(r: redis.Redis, rows: list[tuple[int, list[str]]]) -> list[Book]:
    r.flushall()
    books = [
        Book(id=f"b{i}", title=f"Title {i:03d}", author="X", year=year, description="",
             tags=tuple(tags))
        for i, (year, tags) in enumerate(rows)
    ]  # fmt: skip
    books_load(client=r, books=books)
    return books


def naive_facets(books: list[Book], query: Query) -> dict[str, int]:
    return dict(Counter(tag for book in brute_force(books, query) for tag in book.tags))


@SLOW_OK
@given(rows=books_strategy, query=query_strategy, size=st.integers(min_value=1, max_value=6))
def test_a_walk_that_reads_every_member_gives_the_exact_answer(
    r: redis.Redis, rows: list[tuple[int, list[str]]], query: Query, size: int
) -> None:
    books = load(r, rows)
    expected = [book.id for book in brute_force(books, query)]
    result = catalog_page(client=r, query=query, page_size=size, facet_limit=0, **WALK_WHOLE)
    assert result.total == len(expected) and not result.total_estimated
    assert [book.id for book in result.books] == expected[:size]
    assert {facet.tag: facet.count for facet in result.facets} == naive_facets(books, query)
    assert result.facets_sampled == 0 and not any(facet.estimated for facet in result.facets)


@SLOW_OK
@given(rows=books_strategy, query=query_strategy, size=st.integers(min_value=1, max_value=6))
def test_a_sampled_result_still_pages_exactly_and_estimates_only_tags_of_the_result(
    r: redis.Redis, rows: list[tuple[int, list[str]]], query: Query, size: int
) -> None:
    books = load(r, rows)
    result_books = brute_force(books, query)
    expected = [book.id for book in result_books]
    result = catalog_page(client=r, query=query, page_size=size, **WALK_FEW)
    assert [book.id for book in result.books] == expected[:size]
    if not result.total_estimated:
        assert result.total == len(expected)
    elif not expected:
        assert result.total == 0
    # The sample holds books of the result only: a facet is a tag some result book carries,
    # and a required tag is on every sampled book (its estimate is the total).
    carried = {tag for book in result_books for tag in book.tags}
    assert {facet.tag for facet in result.facets} <= carried
    for facet in result.facets:
        if facet.tag in query.all_of:
            assert facet.count == result.total and not facet.estimated


def catalog_of(count: int, seed: int) -> list[Book]:
    """`count` books: "common" on about half, "mid" on a fifth, "rare" on 1 in 50."""
    rng = random.Random(seed)
    books = []
    for i in range(count):
        tags = [t for t, share in (("common", 0.5), ("mid", 0.2), ("rare", 0.02), ("other", 0.3))
                if rng.random() < share]  # fmt: skip
        books.append(Book(id=f"b{i}", title=f"Book {i:05d}", author="A", year=2000,
                          description="", tags=tuple(tags)))  # fmt: skip
    return books


def test_big_results_are_estimated_from_a_sample_close_to_the_truth(r: redis.Redis) -> None:
    books = catalog_of(3000, seed=4)
    books_load(client=r, books=books)
    query = Query(any_of=("common", "mid"), none_of=("other",))
    exact = brute_force(books, query)
    result = catalog_page(
        client=r, query=query, exact_size_cost=0, facet_sample_reads=800, facet_crossover=300
    )
    assert result.total_estimated and result.facets_sampled > 100
    # An even sample of a few hundred books: within a fifth of the truth (about 8 standard
    # deviations: the sample's order follows the store's member hashes, new every start).
    assert abs(result.total - len(exact)) <= 0.2 * len(exact)
    truth = naive_facets(books, query)
    for facet in result.facets:
        assert facet.estimated or facet.count == result.total
        assert abs(facet.count - truth[facet.tag]) <= 0.2 * len(exact) + 10, facet
    assert [book.id for book in result.books] == [book.id for book in exact[:20]]


def test_a_big_or_not_result_counts_its_facets_without_a_sintercard_per_tag(
    r: redis.Redis,
) -> None:
    """The cost of a big result's facets does not grow with the number of tags counted."""
    books = catalog_of(3000, seed=5)
    books_load(client=r, books=books)
    query = Query(any_of=("common", "mid"), none_of=("other",))
    stats_reset(r)
    result = catalog_page(client=r, query=query, facet_crossover=300)
    ran = commands_run(r)
    assert result.facets_sampled > 0 and {f.tag for f in result.facets} >= {"common", "mid"}
    assert ran["sintercard"] <= 6  # the size's inclusion-exclusion terms only
    assert ran["hmget"] == 1


@pytest.fixture
def sampled_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every result of more than 20 books is sampled; sizes are estimated beyond 10 checks."""
    monkeypatch.setattr(selectors, "FACET_HASH_MAX", 20)
    monkeypatch.setattr(selectors, "FACET_SAMPLE_READS", 40)
    monkeypatch.setattr(selectors, "EXACT_SIZE_COST", 10)
    selectors.KEPT_PAGES.clear()


def test_the_page_says_which_counts_are_estimates(
    r: redis.Redis, client: Client, sampled_pages: None
) -> None:
    books_load(client=r, books=catalog_of(400, seed=6))
    page = client.get("/catalog/?any=common&any=mid&not=other")
    html = page.content.decode()
    assert page.status_code == 200
    assert "About " in html and "of about " in html
    assert "≈" in html and "are estimates from a sample of" in html
    exact = client.get("/catalog/?all=rare")
    assert "≈" not in exact.content.decode() and "About " not in exact.content.decode()
