"""Anonymous pages write nothing to the store but the visit counters.

A write costs the single-threaded store an append-only-file write and an fsync, shared with the
bookings it confirms; a visitor browsing must not cause any. Checked two ways: which write
commands the server ran (INFO commandstats, which also counts commands run inside functions,
so a scratch key made and deleted in one call is caught), and which keys changed.
"""

from __future__ import annotations

import pytest
import redis
from django.test import Client

from catalog.demo import load_demo, read_books
from catalog.selectors import Query, catalog_page
from strongroom.keyspace import VISITS_VIEWS, VISITS_VISITORS, family_of

# The server's own INFO and a raw client on its connection pool: one server, not a cluster
# (tests/store/test_budgets.py checks the pages' writes on both).
pytestmark = pytest.mark.single_node

# What recording a visit may run: the day's view count and unique-visitor HyperLogLog.
VISIT_WRITES = {"incr", "incrby", "pfadd", "expire", "pexpire", "expireat", "pexpireat"}


def write_commands(client: redis.Redis) -> set[str]:
    """Names of the write commands the server has run since the last CONFIG RESETSTAT."""
    ran = {name.removeprefix("cmdstat_") for name in client.info("commandstats")}
    flags = {name: set(info["flags"]) for name, info in client.command().items() if name in ran}
    writes = {name for name, flag in flags.items() if "write" in flag}
    # A function called with FCALL may write; a read page calls only FCALL_RO.
    return writes | ({"fcall"} & ran)


def snapshot(client: redis.Redis) -> dict[str, bytes | None]:
    """Every key except the visit counters, with its serialised value."""
    raw = redis.Redis(connection_pool=client.connection_pool)
    keys = [
        k
        for k in client.scan_iter(count=1000)
        if family_of(k) not in (VISITS_VIEWS, VISITS_VISITORS)
    ]
    pipe = raw.pipeline(transaction=False)
    for key in keys:
        pipe.dump(key)
    return dict(zip(keys, pipe.execute(), strict=True))


@pytest.fixture
def catalog(r: redis.Redis) -> str:
    load_demo(r)
    return read_books()[0].id


def public_pages(book_id: str) -> list[str]:
    return [
        "/",
        "/catalog/",
        "/catalog/?all=algorithms",
        "/catalog/?all=algorithms&all=python",
        "/catalog/?any=web&any=python&not=java&sort=-year&page=2",
        "/catalog/?not=python",
        "/catalog/?all=python&any=web&any=databases&not=java&facets=all",
        "/catalog/?all=no-such-tag",
        f"/catalog/book/{book_id}/",
        "/accounts/login/",
        "/accounts/signup/",
        "/book/",
        "/book/?cls=C&room=7&boxes=1",
        "/book/parts/calendar/?cls=A&room=158",
        "/book/pickup/",
        "/healthz",
        "/no-such-page/",
    ]


def test_an_anonymous_visitor_writes_nothing_but_visit_counters(
    r: redis.Redis, catalog: str
) -> None:
    before = snapshot(r)
    r.config_resetstat()
    visitor = Client()
    statuses = {path: visitor.get(path).status_code for path in public_pages(catalog)}
    assert all(status < 500 for status in statuses.values()), statuses
    assert write_commands(r) <= VISIT_WRITES, write_commands(r)
    assert snapshot(r) == before


def test_a_catalog_query_of_every_shape_runs_read_only_functions(
    r: redis.Redis, catalog: str
) -> None:
    shapes = [
        Query(all_of=("algorithms", "python")),
        Query(any_of=("web", "python", "databases")),
        Query(all_of=("python",), any_of=("web",), none_of=("java",), sort="year"),
        Query(none_of=("python", "java"), page=3),
        Query(all_of=("python",), none_of=("no-such-tag",)),
    ]
    r.config_resetstat()
    for query in shapes:
        for crossover in (0, 10_000):
            catalog_page(client=r, query=query, facet_crossover=crossover)
    assert write_commands(r) == set()
    stats = r.info("commandstats")
    assert "cmdstat_fcall_ro" in stats and "cmdstat_fcall" not in stats
