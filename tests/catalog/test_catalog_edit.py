"""Adding, editing and deleting books keeps every tag set, count and order exact."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
import redis
from django.conf import LazySettings
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from catalog.rules import Book, InvalidBook
from catalog.selectors import Query, book_get, catalog_page, tags_with_counts
from catalog.services import (
    BookExists,
    BookStale,
    book_add,
    book_delete,
    book_edit,
    books_load,
)
from strongroom import keyspace
from strongroom.decoders import text_list, text_scored
from tests.catalog_support import assert_catalog_exact

HOSTILE = [
    "a:b",
    "{x}",
    "*",
    "two words",
    "line\nbreak",
    "🙂",
    "机器学习",
    "100%",
    "sr:{cat}:books",
]


@pytest.fixture
def fast_writes(settings: LazySettings) -> Iterator[None]:
    """Skip the wait for the disk: these tests are about the indexes, not durability."""
    settings.STRONGROOM_DURABILITY = "none"
    yield


def test_hostile_tag_names_round_trip_and_are_found(r: redis.Redis) -> None:
    book_add(client=r, book_id="h1", title="Hostile", author="Eve", year=2020, tags=HOSTILE)
    book_add(client=r, book_id="h2", title="Plain", author="Bob", year=2021, tags=["plain"])
    book = book_get(client=r, book_id="h1")
    assert book is not None and book.tags == tuple(HOSTILE)
    assert dict(tags_with_counts(client=r)) == {**dict.fromkeys(HOSTILE, 1), "plain": 1}
    for tag in HOSTILE:
        found = catalog_page(client=r, query=Query(all_of=(tag,)))
        assert [b.id for b in found.books] == ["h1"], tag
        assert r.sismember(keyspace.CATALOG_TAG.key(tag=tag), "h1")
    excluded = catalog_page(client=r, query=Query(none_of=("sr:{cat}:books",)))
    assert [b.id for b in excluded.books] == ["h2"]
    # A tag named like a key of the catalog stays a tag: the real key is untouched.
    assert r.scard(keyspace.CATALOG_BOOKS.key()) == 2
    assert_catalog_exact(r)


def test_changing_tags_moves_the_book_between_tag_sets(r: redis.Redis) -> None:
    version = book_add(
        client=r, book_id="b1", title="Ruby on Rails", author="X", year=2006, tags=["ruby", "web"]
    )
    book_add(client=r, book_id="b2", title="Other", author="Y", year=2001, tags=["ruby"])
    book_edit(
        client=r, book_id="b1", expected_version=version, token="t1", title="Ruby on Rails",
        author="X", year=2006, tags=["ruby", "rails"],
    )  # fmt: skip
    assert not r.exists(keyspace.CATALOG_TAG.key(tag="web"))
    assert dict(tags_with_counts(client=r)) == {"ruby": 2, "rails": 1}
    assert_catalog_exact(r)


def test_deleting_leaves_no_id_in_any_tag_set_and_empty_tags_disappear(r: redis.Redis) -> None:
    book_add(client=r, book_id="b1", title="One", author="X", year=2000, tags=["solo", "shared"])
    book_add(client=r, book_id="b2", title="Two", author="X", year=2000, tags=["shared"])
    assert book_delete(client=r, book_id="b1") is True
    assert book_delete(client=r, book_id="b1") is False
    assert book_get(client=r, book_id="b1") is None
    assert dict(tags_with_counts(client=r)) == {"shared": 1}
    for key in r.scan_iter(match="*"):
        if r.type(key) in ("set", "zset"):
            members = text_list(
                list(r.smembers(key)) if r.type(key) == "set" else r.zrange(key, 0, -1)
            )
            assert not any(member == "b1" or member.endswith("\0b1") for member in members)
    assert_catalog_exact(r)


def test_a_resent_add_adds_the_book_once(r: redis.Redis) -> None:
    args = dict(book_id="b1", title="T", author="A", year=2000, tags=["x"])
    assert book_add(client=r, **args) == "1"  # type: ignore[arg-type]
    assert book_add(client=r, **args) == "1"  # type: ignore[arg-type]
    with pytest.raises(BookExists):
        book_add(client=r, **args, token="another form")  # type: ignore[arg-type]
    assert dict(tags_with_counts(client=r)) == {"x": 1}


def test_a_resent_edit_is_applied_once_and_a_stale_one_is_refused(r: redis.Redis) -> None:
    book_add(client=r, book_id="b1", title="T", author="A", year=2000, tags=["x"])
    edit = dict(
        client=r, book_id="b1", expected_version="1", token="form-1", title="T2", author="A",
        year=2001, tags=["y"],
    )  # fmt: skip
    assert book_edit(**edit) == "2"  # type: ignore[arg-type]
    assert book_edit(**edit) == "2"  # type: ignore[arg-type]
    with pytest.raises(BookStale):
        book_edit(**{**edit, "token": "form-2", "tags": ["z"]})  # type: ignore[arg-type]
    book = book_get(client=r, book_id="b1")
    assert book is not None and (book.title, book.tags, book.version) == ("T2", ("y",), "2")
    with pytest.raises(BookStale):
        book_delete(client=r, book_id="b1", expected_version="1")
    assert_catalog_exact(r)


@pytest.mark.parametrize("form", ["add", "edit"])
def test_a_form_sent_again_with_other_content_saves_that_content(r: redis.Redis, form: str) -> None:
    """Back, a typo fixed, save: the same form (its token) with other content. The book is as
    that form left it, so the new content is saved (it used to answer "saved" and keep the
    old); sent once more unchanged, nothing more happens."""
    book_add(client=r, book_id="b1", title="T", author="A", year=2000, tags=["x", "old"])
    if form == "add":
        first = dict(client=r, book_id="b2", title="First", author="A", year=2000,
                     tags=["x", "old"], token="add-form")  # fmt: skip
        assert book_add(**first) == "1"  # type: ignore[arg-type]
        fixed = {**first, "title": "Second", "tags": ["x", "new"]}
        assert book_add(**fixed) == "2"  # type: ignore[arg-type]
        assert book_add(**fixed) == "2"  # type: ignore[arg-type]
        book_id = "b2"
    else:
        first = dict(client=r, book_id="b1", expected_version="1", token="edit-form",
                     title="Edit one", author="A", year=2001, tags=["x", "old"])  # fmt: skip
        assert book_edit(**first) == "2"  # type: ignore[arg-type]
        fixed = {**first, "title": "Edit two", "tags": ["x", "new"]}
        assert book_edit(**fixed) == "3"  # type: ignore[arg-type]
        assert book_edit(**fixed) == "3"  # type: ignore[arg-type]
        book_id = "b1"
    book = book_get(client=r, book_id=book_id)
    assert book is not None and (book.title, book.tags) == (fixed["title"], ("x", "new"))
    assert_catalog_exact(r)
    # Another form of the same book, from before these saves, is still refused as stale.
    with pytest.raises(BookStale):
        book_edit(client=r, book_id=book_id, expected_version="1", token="other-form",
                  title="Late", author="A", year=2000, tags=["x"])  # fmt: skip


@pytest.mark.parametrize(
    "change",
    [
        {"title": ""},
        {"title": "x" * 201},
        {"year": 1700},
        {"tags": ["ok", "ok"]},
        {"tags": [f"t{i}" for i in range(21)]},
        {"tags": ["x" * 41]},
        {"description": "d" * 2001},
        {"description": "a\x00b"},
        {"description": "red \x1b[31mtext"},
        {"description": "\u202etxt.exe"},
    ],
)
def test_bad_books_are_refused_before_anything_is_written(
    r: redis.Redis, change: dict[str, object]
) -> None:
    book = dict(book_id="b1", title="T", author="A", year=2000, tags=["x"]) | change
    with pytest.raises(InvalidBook):
        book_add(client=r, **book)  # type: ignore[arg-type]
    assert r.dbsize() == 0


def test_title_order_survives_running_out_of_gaps(r: redis.Redis) -> None:
    # Each title sorts just after the previous one and before "b", halving the same gap
    # until the order must be renumbered; neighbours always stay at least 1 apart.
    books = [
        Book(id=book_id, title=title, author="A", year=2000, description="", tags=("t",))
        for book_id, title in (("first", "a"), ("last", "b"))
    ]
    books += [
        Book(id=f"b{k}", title="a" + chr(0x4E00 + k), author="A", year=2000,
             description="", tags=("t",))
        for k in range(40)
    ]  # fmt: skip
    for book in books:
        books_load(client=r, books=[book])
    assert_catalog_exact(r)
    scored = r.zrange(keyspace.CATALOG_BY_TITLE.key(), 0, -1, withscores=True)
    scores = [s for _, s in text_scored(scored)]
    assert min(b - a for a, b in itertools.pairwise(scores)) >= 1
    titles = [b.title for b in catalog_page(client=r, query=Query(), page_size=100).books]
    assert titles == sorted(titles)
    by_year = catalog_page(client=r, query=Query(sort="-year"), page_size=100).books
    assert [b.title for b in by_year] == titles


ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "edit", "delete"]),
        st.integers(min_value=0, max_value=5),
        st.lists(st.sampled_from(["ruby", "web", *HOSTILE[:5]]), unique=True, max_size=4),
        st.sampled_from(["Alpha", "beta", "Gamma", "delta", "Ω"]),
    ),
    max_size=15,
)


@hypothesis_settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=ops)
def test_any_sequence_of_edits_keeps_every_index_exact(
    r: redis.Redis, fast_writes: None, steps: list[tuple[str, int, list[str], str]]
) -> None:
    r.flushall()
    for number, (op, which, tags, title) in enumerate(steps):
        book_id = f"b{which}"
        current = book_get(client=r, book_id=book_id)
        if op == "add" and current is None:
            book_add(client=r, book_id=book_id, title=title, author="A", year=2000, tags=tags)
        elif op == "edit" and current is not None:
            book_edit(
                client=r, book_id=book_id, expected_version=current.version,
                token=f"t{number}", title=title, author="A", year=2001, tags=tags,
            )  # fmt: skip
            assert book_get(client=r, book_id=book_id).tags == tuple(tags)  # type: ignore[union-attr]
        elif op == "delete":
            book_delete(client=r, book_id=book_id)
        assert_catalog_exact(r)


def test_a_malformed_call_is_refused_before_any_write(r: redis.Redis) -> None:
    from catalog.services import save_call
    from strongroom.libraries import fcall

    keys, args = save_call(
        book_id="b1", expected_version="", token="t", title="T", author="A", year=2000,
        description="", tags=["x", "y"], old_tags=(),
    )  # fmt: skip
    args[5] = "not a year"
    with pytest.raises(redis.ResponseError, match="malformed call"):
        fcall(r, "catalog_book_save", keys, args)
    with pytest.raises(redis.ResponseError, match="malformed call"):
        fcall(r, "catalog_book_save", keys[:-1], [*args[:5], 2000, *args[6:]])
    assert r.dbsize() == 0
