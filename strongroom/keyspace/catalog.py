"""The catalog's keys: books, tags and the orders the queries scan."""

from __future__ import annotations

from django.utils.translation import gettext_noop as noop

from strongroom.keyspace.core import declare

# Every catalog key shares the `{cat}` hash tag: filters combine tag sets with SINTER / SUNION /
# SDIFF and sort with ZINTERSTORE, which Redis Cluster only allows within one slot.
CATALOG_BOOK = declare(
    "catalog_book",
    "{cat}:book:<book_id>",
    type="hash",
    holds=noop(
        "one book: title, author, year, description, tags (a JSON list), version, edit token"
    ),
    app="catalog",
    why=noop("read and written whole; the tag list lets an edit find the tag sets it must leave"),
)
CATALOG_TAG = declare(
    "catalog_tag",
    "{cat}:tag:<tag>",
    type="set",
    holds=noop("the ids of the books that carry one tag (the tag name is percent-escaped)"),
    app="catalog",
    why=noop("AND / OR / NOT are SINTER / SUNION / SDIFF; an empty set vanishes with its tag"),
)
CATALOG_TAGS = declare(
    "catalog_tags",
    "{cat}:tags",
    type="zset",
    holds=noop("every tag in use, scored by its number of books"),
    app="catalog",
    why=noop("lists tags with counts and picks the most popular tags for facets in one command"),
)
CATALOG_BOOKS = declare(
    "catalog_books",
    "{cat}:books",
    type="set",
    holds=noop("the ids of every book (the universe a NOT-only query subtracts from)"),
    app="catalog",
)
CATALOG_BY_TITLE = declare(
    "catalog_by_title",
    "{cat}:by-title",
    type="zset",
    holds=noop(
        "book id scored by its position in title order (gapped ranks, renumbered when full)"
    ),
    app="catalog",
    why=noop("ZINTERSTORE with a result set sorts it by title without reading the books"),
)
CATALOG_TITLE_LEX = declare(
    "catalog_title_lex",
    "{cat}:title-lex",
    type="zset",
    holds=noop("`<casefolded title>\\0<book id>` at score 0, to find a new title's neighbours"),
    app="catalog",
)
CATALOG_BY_YEAR = declare(
    "catalog_by_year",
    "{cat}:by-year",
    type="zset",
    holds=noop(
        "book id scored by year * 1e10 + its title score: oldest first, A to Z within a year"
    ),
    app="catalog",
    why=noop("a result page walks it in order (or intersects it) without reading the books"),
)
CATALOG_BY_YEAR_DESC = declare(
    "catalog_by_year_desc",
    "{cat}:by-year-desc",
    type="zset",
    holds=noop(
        "book id scored by -year * 1e10 + its title score: newest first, A to Z within a year"
    ),
    app="catalog",
)
CATALOG_BOOK_TAGS = declare(
    "catalog_book_tags",
    "{cat}:book-tags",
    type="hash",
    holds=noop("book id -> the book's tags as a JSON list (the book hash's own value)"),
    app="catalog",
    why=noop(
        "a small result's facets are counted from one HMGET instead of one SINTERCARD per tag"
    ),
)

CATALOG_EDITION = declare(
    "catalog_edition",
    "{cat}:edition",
    type="string",
    holds=noop("a random token, set anew by every write of the catalog's functions"),
    app="catalog",
    why=noop(
        "a worker keeps a result page while the token stays the same: one GET instead of the query"
    ),
)
