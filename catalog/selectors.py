"""Catalog reads: one book, the tag list, and a result page with its facets."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field

import redis
from django.conf import settings

from catalog.calls import FACETS, QUERY
from catalog.rules import Book
from strongroom import keyspace
from strongroom.ahead import Command, command, pipeline_replies
from strongroom.decoders import text_hash, text_scored
from strongroom.libraries import fcall
from strongroom.recent import Recent

SORTS = ("title", "year", "-year")
# Position (1-based, as in Lua's KEYS) of the first tag set in the key list of `catalog_query`.
FIRST_TAG_KEY = len(QUERY.keys) + 1
# What one more SINTERCARD in the pipeline costs (client and server), in membership checks.
COMMAND_COST = 100
# Results of at most this many books count their facets from the book-tags hash (one HMGET,
# every tag's count exact in Lua); bigger ones with one SINTERCARD per tag. Measured on the
# bench data set (20,641 books, 111 tags): see docs/internals.md, "The catalog".
FACET_HASH_MAX = 1500
# A bigger result's facets (or one costly to build) are counted on an even sample of about
# FACET_SAMPLE of its books, found by reading at most FACET_SAMPLE_READS tag-set members:
# estimates, marked as such on the page. A result's size is exact (SINTERCARD over the tag
# sets, by inclusion-exclusion) while that walks at most EXACT_SIZE_COST set members; beyond,
# it is estimated from such a walk and shown as "about". So a never-asked query's store time
# is bounded whatever its tags (bench/catalog_cold.py; docs/internals.md, "The catalog").
FACET_SAMPLE = 500
FACET_SAMPLE_READS = 4_000
EXACT_SIZE_COST = 100_000


def book_from_hash(data: dict[str, str]) -> Book | None:
    """A Book from its stored hash (None for a missing one)."""
    if not data:
        return None
    return Book(
        id=data["id"],
        title=data["title"],
        author=data["author"],
        year=int(data["year"]),
        description=data.get("description", ""),
        tags=tuple(json.loads(data.get("tags") or "[]")),
        version=data.get("ver", "0"),
    )


def book_get(*, client: redis.Redis, book_id: str) -> Book | None:
    """One book, or None."""
    return book_from_hash(text_hash(client.hgetall(keyspace.CATALOG_BOOK.key(book_id=book_id))))


@functools.lru_cache(maxsize=4096)
def _tag_key(prefix: str, name: str) -> str:
    return keyspace.CATALOG_TAG.key(tag=name)


def tag_key(name: str) -> str:
    """The key of a tag's set (remembered: a result page names up to 150 of them)."""
    return _tag_key(settings.STRONGROOM_KEY_PREFIX, name)


def tags_with_counts(*, client: redis.Redis, limit: int = -1) -> list[tuple[str, int]]:
    """Tags in use with their number of books, most used first (then by name)."""
    stop = -1 if limit < 0 else limit - 1
    rows = text_scored(
        client.zrange(keyspace.CATALOG_TAGS.key(), 0, stop, desc=True, withscores=True)
    )
    return [(name, int(score)) for name, score in rows]


@dataclass(frozen=True)
class Query:
    """A browse query: tags that must all match, tags of which one must match, tags excluded."""

    all_of: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    none_of: tuple[str, ...] = ()
    sort: str = "title"
    page: int = 1
    # Show every counted facet rather than the most useful few (`?facets=all`).
    all_facets: bool = False

    @property
    def tags(self) -> tuple[str, ...]:
        return (*self.all_of, *self.any_of, *self.none_of)

    @property
    def is_filtered(self) -> bool:
        return bool(self.tags)


@dataclass(frozen=True)
class Facet:
    """A tag and how many books of the current result carry it (`capped`: at least that;
    `estimated`: about that, scaled from a sample of the result)."""

    tag: str
    count: int
    capped: bool = False
    estimated: bool = False


@dataclass
class ResultPage:
    """One page of a query's result with the facets of the whole result."""

    query: Query
    total: int
    books: list[Book]
    facets: list[Facet]
    unknown: list[str] = field(default_factory=list)
    page_size: int = 20
    # How many books of the result the facet counts were estimated from (0: counted exactly).
    facets_sampled: int = 0
    # The total is an estimate (from an even sample of the result).
    total_estimated: bool = False
    # The catalog's edition it was computed from ('' when no write ever set one).
    edition: str = ""

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.page_size))

    @property
    def page_out_of_range(self) -> bool:
        # An estimated total may be short: a page that has books exists.
        return self.query.page > self.pages and not (self.total_estimated and self.books)


def facet_candidates(
    *,
    popular: list[tuple[str, int]],
    chosen: list[str],
    total: int,
    everything: int,
    limit: int,
    budget: int,
) -> list[str]:
    """The tags whose facet counts a result page asks for: the query's own tags, then the
    most used tags while the estimated work stays within `budget` set-membership checks.

    SINTERCARD walks the smaller set and stops after `limit` matches; assuming tags are
    independent, that is about min(smaller, limit * everything / larger) checks per tag, plus
    the cost of one more command. A small result gets all `popular` tags; a big one the most
    used tags the budget allows.
    """
    candidates = list(chosen)
    spent = 0
    for name, count in popular:
        if name in candidates:
            continue
        smaller, larger = sorted((total, count))
        cost = smaller if not limit else min(smaller, limit * everything // max(larger, 1) + 1)
        cost += COMMAND_COST
        if spent + cost > budget:
            break
        spent += cost
        candidates.append(name)
    return candidates


def _query_fixed_keys() -> dict[str, str]:
    return {
        "books": keyspace.CATALOG_BOOKS.key(),
        "registry": keyspace.CATALOG_TAGS.key(),
        "by_title": keyspace.CATALOG_BY_TITLE.key(),
        "by_year": keyspace.CATALOG_BY_YEAR.key(),
        "by_year_desc": keyspace.CATALOG_BY_YEAR_DESC.key(),
        "edition": keyspace.CATALOG_EDITION.key(),
    }


def query_keys(tag_keys: list[str]) -> list[str]:
    """The keys of `catalog_query`: the fixed ones, then the query's tag sets."""
    fixed = _query_fixed_keys()
    return [*(fixed[name] for name in QUERY.keys), *tag_keys]


def catalog_page(
    *,
    client: redis.Redis,
    query: Query,
    page_size: int | None = None,
    facet_tags: int | None = None,
    facet_limit: int | None = None,
    facet_budget: int | None = None,
    facet_crossover: int | None = None,
    facet_sample_reads: int | None = None,
    facet_sample: int | None = None,
    exact_size_cost: int | None = None,
) -> ResultPage:
    """A result page in at most two round trips, whatever the page size or number of tags.

    Both calls are read-only functions (FCALL_RO) and write nothing: first `catalog_query`
    sizes the result (SINTERCARD over the tag sets while that costs at most `exact_size_cost`
    members walked, else estimated from an even sample), finds the page (walking the sort order
    and testing membership, or sorting a small result built in Lua) and names the most used
    tags; then one pipeline reads the page's books and calls `catalog_facets`, which counts the
    facets from the book-tags hash: over the whole result when it has at most `facet_crossover`
    books and is cheap to build, else over an even sample of about `facet_sample` books found
    by reading at most `facet_sample_reads` tag-set members (estimates). On a store whose
    book-tags hash is incomplete, or with `facet_sample_reads` 0, per tag with SINTERCARD or
    membership checks that stop at the limit (see `facet_candidates`).
    """
    size = page_size or settings.CATALOG_PAGE_SIZE
    top_n = facet_tags or settings.CATALOG_FACET_TAGS
    limit = settings.CATALOG_FACET_LIMIT if facet_limit is None else facet_limit
    budget = settings.CATALOG_FACET_BUDGET if facet_budget is None else facet_budget
    crossover = FACET_HASH_MAX if facet_crossover is None else facet_crossover
    sample_reads = FACET_SAMPLE_READS if facet_sample_reads is None else facet_sample_reads
    exact_cost = EXACT_SIZE_COST if exact_size_cost is None else exact_size_cost
    sample = FACET_SAMPLE if facet_sample is None else facet_sample
    groups = (query.all_of, query.any_of, query.none_of)
    query_args = {
        "n_and": len(query.all_of), "n_or": len(query.any_of), "n_not": len(query.none_of),
        "sort": query.sort, "offset": (query.page - 1) * size, "count": size, "top_n": top_n,
        "exact_cost": exact_cost, "max_reads": sample_reads,
    }  # fmt: skip
    tag_keys = [tag_key(tag) for group in groups for tag in group]
    keys, args = QUERY.call(keys=_query_fixed_keys(), args=query_args, more_keys=tag_keys)
    reply = QUERY.reply_of(fcall(client, QUERY.name, keys, args, read_only=True))
    total, result_index, ids = reply["total"], reply["result_index"], reply["ids"]
    unknown_indexes, top, everything = reply["unknown"], reply["top"], reply["everything"]
    edition = str(reply["edition"])

    popular = [(top[i], int(float(top[i + 1]))) for i in range(0, len(top), 2)]
    unknown = [query.tags[index - FIRST_TAG_KEY] for index in unknown_indexes]
    chosen = [tag for tag in query.tags if tag not in unknown]
    count_facets = result_index != 0 and total > 0
    candidates: list[str] = []
    if count_facets and total > crossover:
        # Counted on a sample: the cost does not grow with the number of tags.
        candidates = [*chosen, *(name for name, _count in popular if name not in chosen)]
    elif count_facets:
        candidates = facet_candidates(
            popular=popular, chosen=chosen, total=total, everything=everything, limit=limit,
            budget=budget,
        )  # fmt: skip

    pipe = client.pipeline(transaction=False)
    for book_id in ids:
        pipe.hgetall(keyspace.CATALOG_BOOK.key(book_id=book_id))
    if count_facets:
        known = [[tag for tag in group if tag not in unknown] for group in groups]
        n_and, n_or, n_not = map(len, known)
        facet_args = {
            "limit": limit, "crossover": crossover, "n_and": n_and, "n_or": n_or,
            "n_not": n_not, "total": total, "max_reads": sample_reads, "sample": sample,
            "build_cost": reply["build_cost"],
        }  # fmt: skip
        sets = [tag_key(tag) for tag in [*(t for group in known for t in group), *candidates]]
        facet_keys, facet_argv = FACETS.call(
            keys={
                "book_tags": keyspace.CATALOG_BOOK_TAGS.key(),
                "books": keyspace.CATALOG_BOOKS.key(),
            },
            args=facet_args,
            more_keys=sets,
            more_args=candidates,
        )
        pipe.fcall_ro(FACETS.name, len(facet_keys), *facet_keys, *facet_argv)
    replies = pipe.execute() if len(pipe) else []

    books = [book for book in map(book_from_hash, replies[: len(ids)]) if book is not None]
    sampled = 0
    if count_facets:
        counted = FACETS.reply_of(replies[len(ids)])
        sampled = int(counted["counted"])
        facets = facets_of(candidates, counted["counts"], limit=limit, sampled=sampled, total=total)
    elif result_index == 0 and total > 0:
        facets = [Facet(name, count) for name, count in popular]
    else:
        facets = []
    facets.sort(key=lambda facet: (-facet.count, facet.tag))
    return ResultPage(
        query=query, total=int(total), books=books, facets=facets, unknown=unknown,
        page_size=size, edition=edition, facets_sampled=sampled,
        total_estimated=bool(int(reply["estimated"])),
    )  # fmt: skip


def facets_of(
    names: list[str], counts: list[int], *, limit: int, sampled: int, total: int
) -> list[Facet]:
    """The facets of `catalog_facets`' counts (of the tags `names`): exact ones capped at
    `limit`, or, when `sampled` books of the result were counted, scaled to the result's
    `total` and marked as estimates. Tags no counted book carries are left out."""
    if not sampled:
        return [
            Facet(name, int(count), capped=bool(limit) and int(count) >= limit)
            for name, count in zip(names, counts, strict=True)
            if int(count) > 0
        ]
    return [
        Facet(name, total if int(count) >= sampled else round(int(count) * total / sampled),
              estimated=int(count) < sampled)
        for name, count in zip(names, counts, strict=True)
        if int(count) > 0
    ]  # fmt: skip


# Result pages this worker computed, by query and settings, least recently used out. A page is
# only given again while the catalog's edition is the one it was computed from: every write of
# the catalog's functions sets a new random edition, so a kept page is never older than the
# catalog (a flushed store has no edition, and nothing is kept then).
KEPT_PAGES: Recent[ResultPage] = Recent(size=settings.CATALOG_PAGES_KEPT)


def edition_read() -> list[Command]:
    """The catalog's edition token: what a kept result page is checked against (the browse
    view sends it ahead with the request's identity, strongroom/ahead.py)."""
    return [command("GET", keyspace.CATALOG_EDITION.key())]


def result_page(*, client: redis.Redis, query: Query) -> ResultPage:
    """`catalog_page` for visitors: a page this worker computed under the catalog's current
    edition comes back for one GET (1 round trip instead of 2, and no query work on the
    server); a new query costs what `catalog_page` costs, a changed catalog one GET more."""
    key = (
        query, settings.CATALOG_PAGE_SIZE, settings.CATALOG_FACET_TAGS,
        settings.CATALOG_FACET_LIMIT, settings.CATALOG_FACET_BUDGET,
    )  # fmt: skip
    kept = KEPT_PAGES.get(key)
    if kept is not None and pipeline_replies(client, edition_read())[0] == kept[0].edition:
        return kept[0]
    page = catalog_page(client=client, query=query)
    if page.edition and KEPT_PAGES.size > 0:
        KEPT_PAGES.put(key, page)
    return page
