"""Catalog writes: add, edit and delete a book with its tags, each one server-side function."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence

import redis

from catalog.rules import Book, InvalidBook, check_book, sort_key
from catalog.selectors import book_get
from strongroom import keyspace
from strongroom.audit import staff_audit_record
from strongroom.store import durable_fcall, load_functions

# The staff actions this app writes to the staff audit (strongroom.audit).
AUDIT_KINDS = ("book_add", "book_edit", "book_delete")


class BookMissing(Exception):
    """The book is not (or no longer) in the catalog."""


class BookStale(Exception):
    """Someone changed the book since the form was shown; nothing was written."""


class BookExists(Exception):
    """A different book already has this id; nothing was written."""


def new_book_id() -> str:
    """A client-made id, so that a retried add recognises its own earlier success."""
    return uuid.uuid4().hex


def fixed_keys(book_id: str) -> list[str]:
    """The keys every edit of `book_id` touches, in the order the Lua functions expect."""
    return [
        keyspace.CATALOG_BOOK.key(book_id=book_id),
        keyspace.CATALOG_BOOKS.key(),
        keyspace.CATALOG_TAGS.key(),
        keyspace.CATALOG_BY_TITLE.key(),
        keyspace.CATALOG_TITLE_LEX.key(),
        keyspace.CATALOG_BY_YEAR.key(),
        keyspace.CATALOG_BY_YEAR_DESC.key(),
        keyspace.CATALOG_BOOK_TAGS.key(),
    ]


def tag_keys(tags: Iterable[str]) -> list[str]:
    """The set key of each tag (names are escaped by the keyspace)."""
    return [keyspace.CATALOG_TAG.key(tag=tag) for tag in tags]


def save_call(
    *,
    book_id: str,
    expected_version: str,
    token: str,
    title: str,
    author: str,
    year: int,
    description: str,
    tags: Sequence[str],
    old_tags: Sequence[str],
) -> tuple[list[str], list[object]]:
    """Keys and arguments of `catalog_book_save` (also pipelined by bulk loads)."""
    keys = [*fixed_keys(book_id), *tag_keys(old_tags), *tag_keys(tags)]
    args: list[object] = [
        book_id, expected_version, token, title, author, year, description, sort_key(title),
        json.dumps(list(tags), ensure_ascii=False), len(old_tags), len(tags), *old_tags, *tags,
    ]  # fmt: skip
    return keys, args


def book_add(
    *,
    client: redis.Redis,
    book_id: str,
    title: str,
    author: str,
    year: int,
    description: str = "",
    tags: Sequence[str],
    token: str | None = None,
    audit_actor: str | None = None,
) -> str:
    """Add a book under a client-made id; adding the same id again with the same token is a
    no-op. Returns the book's version. Raises InvalidBook or BookExists.

    With `audit_actor` (a staff member's id) the first application goes to the staff audit log;
    a resent form does not log the add again."""
    check_book(title=title, author=author, year=year, description=description, tags=list(tags))
    keys, args = save_call(
        book_id=book_id, expected_version="", token=token or book_id, title=title,
        author=author, year=year, description=description, tags=tags, old_tags=(),
    )  # fmt: skip
    reply = durable_fcall(client, "catalog_book_save", keys, args)
    if reply[0] == "exists":
        raise BookExists(book_id)
    if reply[0] == "ok":
        _audit(client, audit_actor, "book_add", book_id, title)
    return str(reply[1])


def book_edit(
    *,
    client: redis.Redis,
    book_id: str,
    expected_version: str,
    token: str,
    title: str,
    author: str,
    year: int,
    description: str = "",
    tags: Sequence[str],
    audit_actor: str | None = None,
) -> str:
    """Change a book and its tags in one step, if nobody changed it since `expected_version`.

    `token` is made when the form is shown: sending the same edit twice applies it once (and
    with `audit_actor`, logs it once). Returns the new version. Raises InvalidBook, BookMissing
    or BookStale.
    """
    check_book(title=title, author=author, year=year, description=description, tags=list(tags))
    current = book_get(client=client, book_id=book_id)
    if current is None:
        raise BookMissing(book_id)
    keys, args = save_call(
        book_id=book_id, expected_version=expected_version, token=token, title=title,
        author=author, year=year, description=description, tags=tags, old_tags=current.tags,
    )  # fmt: skip
    reply = durable_fcall(client, "catalog_book_save", keys, args)
    if reply[0] == "missing":
        raise BookMissing(book_id)
    if reply[0] == "stale":
        raise BookStale(book_id)
    if reply[0] == "ok":
        _audit(client, audit_actor, "book_edit", book_id, title)
    return str(reply[1])


def book_delete(
    *,
    client: redis.Redis,
    book_id: str,
    expected_version: str | None = None,
    audit_actor: str | None = None,
) -> bool:
    """Delete a book and take it out of every tag set. False if it was already gone.

    With `expected_version`, refuses (BookStale) when the book changed since then. With
    `audit_actor`, the deletion (not a repeat of it) goes to the staff audit log.
    """
    for _attempt in range(5):
        current = book_get(client=client, book_id=book_id)
        if current is None:
            return False
        version = expected_version or current.version
        keys = [*fixed_keys(book_id), *tag_keys(current.tags)]
        args = [book_id, version, len(current.tags), *current.tags]
        reply = durable_fcall(client, "catalog_book_delete", keys, args)
        if reply[0] == "ok":
            _audit(client, audit_actor, "book_delete", book_id, current.title)
            return True
        if reply[0] == "gone":
            return False
        if expected_version is not None:
            raise BookStale(book_id)
    raise BookStale(book_id)


def _audit(client: redis.Redis, actor: str | None, kind: str, book_id: str, title: str) -> None:
    # After the edit, under another hash tag: a crash in between loses the entry, never the edit.
    if actor is not None:
        staff_audit_record(client=client, kind=kind, actor_id=actor, subject=book_id, detail=title)


def books_load(*, client: redis.Redis, books: Iterable[Book], chunk: int = 1000) -> int:
    """Add many books, pipelined `chunk` at a time; books already there are left alone.

    Each book's token is its id, so loading the same file twice adds nothing. Returns the
    number of books added.
    """
    added = 0
    batch: list[Book] = []

    def flush() -> None:
        nonlocal added
        pipe = client.pipeline(transaction=False)
        for book in batch:
            keys, args = save_call(
                book_id=book.id, expected_version="", token=book.id, title=book.title,
                author=book.author, year=book.year, description=book.description,
                tags=book.tags, old_tags=(),
            )  # fmt: skip
            pipe.fcall("catalog_book_save", len(keys), *keys, *args)
        for reply in pipe.execute():
            added += reply[0] == "ok"
        batch.clear()

    if not client.function_list(library="catalog"):
        load_functions(client)  # a pipeline cannot reload them halfway
    books = list(books)
    for book in books:  # refuse a bad file before writing any of it
        check_book(
            title=book.title, author=book.author, year=book.year,
            description=book.description, tags=list(book.tags),
        )  # fmt: skip
    for book in books:
        batch.append(book)
        if len(batch) >= chunk:
            flush()
    if batch:
        flush()
    return added


def book_tags_fill(*, client: redis.Redis, chunk: int = 1000) -> int:
    """Rebuild the book-tags hash from the book hashes when it is incomplete (idempotent).

    A store written before the hash existed has fewer entries than books; then every entry is
    rewritten from its book hash (and entries of books that are gone are dropped), `chunk`
    books per function call. Cheap when the hash is complete (one round trip). Returns the
    number of entries written (0 when nothing needed doing).
    """
    hash_key, books_key = keyspace.CATALOG_BOOK_TAGS.key(), keyspace.CATALOG_BOOKS.key()
    pipe = client.pipeline(transaction=False)
    pipe.hlen(hash_key)
    pipe.scard(books_key)
    filled, count = pipe.execute()
    if filled == count:
        return 0
    if not client.function_list(library="catalog"):
        load_functions(client)
    ids = sorted(set(client.smembers(books_key)) | set(client.hkeys(hash_key)))
    written = 0
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk]
        keys = [hash_key, *(keyspace.CATALOG_BOOK.key(book_id=book_id) for book_id in part)]
        written += int(durable_fcall(client, "catalog_book_tags_fill", keys, part))
    return written


__all__ = [
    "BookExists",
    "BookMissing",
    "BookStale",
    "InvalidBook",
    "book_add",
    "book_delete",
    "book_edit",
    "book_tags_fill",
    "books_load",
    "new_book_id",
]
