"""Helpers for the catalog tests: books made quickly and the catalog's invariants checked."""

from __future__ import annotations

import json

import redis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from catalog.rules import Book, sort_key
from catalog.selectors import Query
from catalog.services import books_load
from strongroom import keyspace
from strongroom.decoders import text_hash, text_scored


def add(client: redis.Redis, book_id: str, title: str, year: int, *tags: str) -> None:
    """Add a book with a made-up author (through the bulk path: no wait for the disk)."""
    book = Book(id=book_id, title=title, author="A. Writer", year=year, description="", tags=tags)
    assert books_load(client=client, books=[book]) == 1


def stored_books(client: redis.Redis) -> list[Book]:
    """Every book hash in the store, read directly (not through the code under test)."""
    books = []
    for key in client.scan_iter(match=keyspace.CATALOG_BOOK.key(book_id="*").replace("%2A", "*")):
        data = text_hash(client.hgetall(key))
        books.append(
            Book(
                id=data["id"],
                title=data["title"],
                author=data["author"],
                year=int(data["year"]),
                description=data["description"],
                tags=tuple(json.loads(data["tags"])),
                version=data["ver"],
            )
        )
    return books


def assert_catalog_exact(client: redis.Redis) -> None:
    """Every index agrees with the book hashes: tag sets, tag counts, id set, sort orders and
    the book-tags hash the facet counts read."""
    books = stored_books(client)
    expected: dict[str, set[str]] = {}
    for book in books:
        for tag in book.tags:
            expected.setdefault(tag, set()).add(book.id)
    tag_keys = {
        keyspace.CATALOG_TAG.parse(key)["tag"]: key
        for key in client.scan_iter(match=f"{keyspace.CATALOG_TAG.key(tag='x')[:-1]}*")
    }
    assert set(tag_keys) == set(expected), "a tag set is missing or left over"
    for tag, ids in expected.items():
        assert client.smembers(tag_keys[tag]) == ids, f"tag {tag!r} has the wrong books"
    registry = dict(text_scored(client.zrange(keyspace.CATALOG_TAGS.key(), 0, -1, withscores=True)))
    assert registry == {tag: float(len(ids)) for tag, ids in expected.items()}
    ids = {book.id for book in books}
    assert client.smembers(keyspace.CATALOG_BOOKS.key()) == ids
    by_title = client.zrange(keyspace.CATALOG_BY_TITLE.key(), 0, -1)
    assert by_title == [b.id for b in sorted(books, key=lambda b: (sort_key(b.title), b.id))]
    rank = {book_id: i for i, book_id in enumerate(by_title)}
    oldest = client.zrange(keyspace.CATALOG_BY_YEAR.key(), 0, -1)
    assert oldest == [b.id for b in sorted(books, key=lambda b: (b.year, rank[b.id]))]
    newest = client.zrange(keyspace.CATALOG_BY_YEAR_DESC.key(), 0, -1)
    assert newest == [b.id for b in sorted(books, key=lambda b: (-b.year, rank[b.id]))]
    assert client.zcard(keyspace.CATALOG_TITLE_LEX.key()) == len(books)
    book_tags = text_hash(client.hgetall(keyspace.CATALOG_BOOK_TAGS.key()))
    assert {book_id: tuple(json.loads(tags)) for book_id, tags in book_tags.items()} == {
        book.id: book.tags for book in books
    }, "the book-tags hash disagrees with the book hashes"


def brute_force(books: list[Book], query: Query) -> list[Book]:
    """The query's result in plain Python, in the query's order (a tag no book has is an empty
    set: required, nothing matches; the only "any of" tags, nothing matches)."""
    all_of, any_of, none_of = set(query.all_of), set(query.any_of), set(query.none_of)
    found = [
        book
        for book in books
        if all_of <= set(book.tags)
        and (not any_of or any_of & set(book.tags))
        and not none_of & set(book.tags)
    ]
    if query.sort == "title":
        return sorted(found, key=lambda b: (sort_key(b.title), b.id))
    if query.sort == "year":
        return sorted(found, key=lambda b: (b.year, sort_key(b.title)))
    return sorted(found, key=lambda b: (-b.year, sort_key(b.title)))


def query_strategy(tags: list[str]) -> st.SearchStrategy[Query]:
    """Browse queries over `tags` and a tag no book has: up to three tags a group, any order."""
    group = st.lists(st.sampled_from([*tags, "unknown-tag"]), unique=True, max_size=3)
    return st.builds(
        Query,
        all_of=group.map(tuple),
        any_of=group.map(tuple),
        none_of=group.map(tuple),
        sort=st.sampled_from(["title", "year", "-year"]),
    )


def store_examples(max_examples: int) -> settings:
    """Hypothesis settings for examples that each write and query the real store."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
