"""Catalog writes: add, edit and delete a book with its tags, each one server-side function."""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import redis

from catalog.calls import DELETE, SAVE, TAGS_FILL
from catalog.rules import Book, InvalidBook, check_book, sort_key
from catalog.selectors import book_get
from strongroom import keyspace
from strongroom.audit import staff_audit_record
from strongroom.durable import durable_fcall
from strongroom.libraries import fcalls

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


def _edit_keys(book_id: str) -> dict[str, str]:
    return {
        "book": keyspace.CATALOG_BOOK.key(book_id=book_id),
        "books": keyspace.CATALOG_BOOKS.key(),
        "registry": keyspace.CATALOG_TAGS.key(),
        "by_title": keyspace.CATALOG_BY_TITLE.key(),
        "title_lex": keyspace.CATALOG_TITLE_LEX.key(),
        "by_year": keyspace.CATALOG_BY_YEAR.key(),
        "by_year_desc": keyspace.CATALOG_BY_YEAR_DESC.key(),
        "book_tags": keyspace.CATALOG_BOOK_TAGS.key(),
        "edition": keyspace.CATALOG_EDITION.key(),
    }


def new_edition() -> str:
    """A fresh token for the catalog's edition key: every write sets one (see catalog_page)."""
    return secrets.token_hex(8)


def fixed_keys(book_id: str) -> list[str]:
    """The keys every edit of `book_id` touches, in the order the Lua functions expect."""
    edit_keys = _edit_keys(book_id)
    return [edit_keys[name] for name in SAVE.keys]


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
    args = {
        "book_id": book_id, "expected": expected_version, "token": token, "title": title,
        "author": author, "year": year, "description": description, "sort_key": sort_key(title),
        "tags": json.dumps(list(tags), ensure_ascii=False), "n_old": len(old_tags),
        "n_new": len(tags), "edition": new_edition(),
    }  # fmt: skip
    return SAVE.call(
        keys=_edit_keys(book_id),
        args=args,
        more_keys=[*tag_keys(old_tags), *tag_keys(tags)],
        more_args=[*old_tags, *tags],
    )


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
    no-op (with other content: an edit of what that form added). Returns the book's version.
    Raises InvalidBook or BookExists.

    With `audit_actor` (a staff member's id) the first application goes to the staff audit log;
    a resent form does not log the add again."""
    check_book(title=title, author=author, year=year, description=description, tags=list(tags))
    keys, args = save_call(
        book_id=book_id, expected_version="", token=token or book_id, title=title,
        author=author, year=year, description=description, tags=tags, old_tags=(),
    )  # fmt: skip
    saved = _book_save(client, keys, args, audit=(audit_actor, "book_add", book_id, title))
    if saved.resent:
        return _book_resave(client, args, audit_actor=audit_actor)
    return saved.version


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
    with `audit_actor`, logs it once); sent again with other content (back, a typo fixed), the
    new content goes on top of what that form saved. Returns the new version. Raises
    InvalidBook, BookMissing or BookStale.
    """
    check_book(title=title, author=author, year=year, description=description, tags=list(tags))
    current = book_get(client=client, book_id=book_id)
    if current is None:
        raise BookMissing(book_id)
    keys, args = save_call(
        book_id=book_id, expected_version=expected_version, token=token, title=title,
        author=author, year=year, description=description, tags=tags, old_tags=current.tags,
    )  # fmt: skip
    saved = _book_save(client, keys, args, audit=(audit_actor, "book_edit", book_id, title))
    if saved.resent:
        return _book_resave(client, args, audit_actor=audit_actor)
    return saved.version


_SAVE_REFUSED = {"exists": BookExists, "missing": BookMissing, "stale": BookStale}


@dataclass(frozen=True)
class _Saved:
    version: str
    resent: bool = False  # the form's token was applied before, with other content


def _book_save(
    client: redis.Redis,
    keys: list[str],
    args: list[object],
    *,
    audit: tuple[str | None, str, str, str],
) -> _Saved:
    """Send one catalog_book_save; raise what its refusal means, else audit a first
    application (`audit`: actor, kind, book id, title) and return the version."""
    reply = SAVE.reply_of(durable_fcall(client, SAVE.name, keys, args))
    refused = _SAVE_REFUSED.get(reply["status"])
    if refused is not None:
        raise refused(audit[2])
    if reply["status"] == "ok":
        _audit(client, *audit)
    return _Saved(str(reply["version"]), resent=reply["status"] == "resent")


def _book_resave(client: redis.Redis, args: list[object], *, audit_actor: str | None) -> str:
    """A form saved before, sent again with other content (back, a typo fixed, save): the book
    is as that form left it, so the new content is saved on top of it, as an edit of the
    version it made, from the tags it has now."""
    named = dict(zip(SAVE.args, args, strict=False))
    book_id = str(named["book_id"])
    current = book_get(client=client, book_id=book_id)
    if current is None:
        raise BookMissing(book_id)
    keys, args = save_call(
        book_id=book_id, expected_version=current.version, token=str(named["token"]),
        title=str(named["title"]), author=str(named["author"]), year=int(str(named["year"])),
        description=str(named["description"]), tags=json.loads(str(named["tags"])),
        old_tags=current.tags,
    )  # fmt: skip
    audit = (audit_actor, "book_edit", book_id, str(named["title"]))
    saved = _book_save(client, keys, args, audit=audit)
    if saved.resent:  # changed again meanwhile, by a third send of the same form
        raise BookStale(book_id)
    return saved.version


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
        keys, args = DELETE.call(
            keys=_edit_keys(book_id),
            args={
                "book_id": book_id,
                "expected": version,
                "n_old": len(current.tags),
                "edition": new_edition(),
            },
            more_keys=tag_keys(current.tags),
            more_args=current.tags,
        )
        status = DELETE.reply_of(durable_fcall(client, DELETE.name, keys, args))["status"]
        if status == "ok":
            _audit(client, audit_actor, "book_delete", book_id, current.title)
            return True
        if status == "gone":
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
        calls = [
            save_call(
                book_id=book.id,
                expected_version="",
                token=book.id,
                title=book.title,
                author=book.author,
                year=book.year,
                description=book.description,
                tags=book.tags,
                old_tags=(),
            )
            for book in batch
        ]
        # Without the libraries no call of the batch runs: it is sent again whole.
        replies = fcalls(client, [(SAVE.name, keys, args) for keys, args in calls])
        added += sum(reply[0] == "ok" for reply in replies)
        batch.clear()

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
    ids = sorted(set(client.smembers(books_key)) | set(client.hkeys(hash_key)))
    written = 0
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk]
        keys, args = TAGS_FILL.call(
            keys={"book_tags": hash_key},
            args={},
            more_keys=[keyspace.CATALOG_BOOK.key(book_id=book_id) for book_id in part],
            more_args=part,
        )
        written += int(durable_fcall(client, TAGS_FILL.name, keys, args))
    if written:  # facet counts read the hash: result pages kept by workers are stale now
        client.set(keyspace.CATALOG_EDITION.key(), new_edition())
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
