"""The site on Redis 7.0, the oldest server the README promises (Debian's redis-server 7.0.15).

Redis 7.0 has Functions but no WAITAOF: a confirmed write is durable there because the server
runs `appendfsync always` (fsync before it answers). Every app's real domain functions run here
against a Redis 7.0 of this module alone (Unix socket, no TCP port, AOF always), next to the
suite's Valkey, so the per-server answers of `waitaof_supported` are tested too.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import LazySettings
from django.contrib.auth.hashers import make_password

from accounts import selectors as people
from accounts.services import login_attempt, login_record, person_create, person_register
from accounts.visits import visit_record
from booking.domain.keys import RoomKeys
from booking.domain.records import Booking
from booking.domain.rules import booking_new_id, hold_new_id
from booking.engine import audit, bookings, stats
from booking.engine.cancel import booking_cancel
from booking.engine.claims import ClaimResult, booking_claim
from booking.engine.holds import booking_hold, booking_hold_release
from booking.engine.maintenance import inventory_flush
from booking.engine.pickup import booking_pickup
from booking.slots import bitmap
from catalog.selectors import Query, book_get, catalog_page, tags_with_counts
from catalog.services import BookStale, book_add, book_delete, book_edit
from dashboard import selectors as dashboard
from dashboard.occupancy import occupancy_map
from strongroom import durable, embedded, health, lua_sources, store
from strongroom.audit import staff_audit_entries, staff_audit_record
from strongroom.inventory import keyspace_stats
from tests.booking_support import (
    BUYER,
    NOW,
    SECOND_BUYER,
    SHANGHAI,
    STAFF,
    calendar_days,
    day,
    free_boxes,
    free_hours,
    request,
)
from tests.catalog_support import assert_catalog_exact

REDIS_SERVER = Path("/usr/bin/redis-server")

pytestmark = pytest.mark.skipif(
    not REDIS_SERVER.exists(),
    reason=f"{REDIS_SERVER} (Debian's Redis 7.0) is missing: `make test` installs it as root",
)


def start_redis(data_dir: Path) -> str:
    """Start Redis 7.0 on `data_dir` (the embedded server's config: AOF always, Unix socket,
    no TCP port); return its URL once it answers."""
    data_dir.mkdir(parents=True, exist_ok=True)
    conf = data_dir / "redis.conf"
    conf.write_text(embedded.config_text(data_dir, appendfsync="always"))
    subprocess.run([str(REDIS_SERVER), str(conf)], check=True, timeout=15)
    deadline = time.monotonic() + 15
    while not embedded.answers(data_dir):
        if time.monotonic() > deadline:
            log = data_dir / "valkey.log"
            raise RuntimeError(f"Redis 7.0 did not start:\n{log.read_text()[-2000:]}")
        time.sleep(0.05)
    return embedded.url_for(data_dir)


@pytest.fixture(scope="module")
def redis70_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The data directory of the module's Redis 7.0 (stopped at the end of the module)."""
    data_dir = tmp_path_factory.mktemp("redis70")
    start_redis(data_dir)
    yield data_dir
    embedded.stop(data_dir)


@pytest.fixture(scope="module")
def redis70_client(redis70_dir: Path) -> Iterator[redis.Redis]:
    client = store.connect(embedded.url_for(redis70_dir))
    store.load_functions(client)
    yield client
    client.close()


@pytest.fixture
def old(redis70_client: redis.Redis, settings: LazySettings) -> redis.Redis:
    """Redis 7.0, empty (functions stay loaded), with confirmed writes as in production."""
    settings.STRONGROOM_DURABILITY = "aof"
    redis70_client.flushall()
    return redis70_client


def claim(client: redis.Redis, cls: str = "B", owner: str = BUYER, **extra: Any) -> ClaimResult:
    if cls == "B":
        extra = {"hour_start": 8, "hour_end": 12, **extra}
    return booking_claim(
        client=client, owner_id=owner, request=request(cls, **extra),
        booking_id=booking_new_id(room=int(extra.get("room", 7))), now=NOW,
    )  # fmt: skip


def booked(client: redis.Redis, cls: str = "B", owner: str = BUYER, **extra: Any) -> Booking:
    """A confirmed booking (claim() that must succeed)."""
    result = claim(client, cls, owner, **extra)
    assert result.booking is not None, result
    return result.booking


def aof_bytes(data_dir: Path) -> bytes:
    """Everything the server has appended to its AOF (Redis 7's multi-part appendonlydir)."""
    return b"".join(path.read_bytes() for path in sorted((data_dir / "appendonlydir").iterdir()))


# --- the server and the store module ----------------------------------------------------------


def test_check_reports_redis_7_0_with_lua_and_every_library(old: redis.Redis) -> None:
    assert health.check(old)["server"] == "redis"
    assert health.check(old)["version"].startswith("7.0.")
    libraries = {dict(zip(lib[::2], lib[1::2], strict=True))["library_name"]
                 for lib in old.function_list()}  # fmt: skip
    # Every library the apps ship (a `<app>/lua/<name>.lua` or a folder `<app>/lua/<name>/`).
    assert libraries == {source.stem for source in lua_sources.function_sources()}
    assert {"accounts", "booking", "catalog", "mail"} <= libraries
    assert old.config_get("appendfsync") == {"appendfsync": "always"}


def test_waitaof_is_known_per_server_whichever_is_asked_first(
    old: redis.Redis, r: redis.Redis
) -> None:
    # Fresh pools each time: one process talking to Redis 7.0 and Valkey gets each one's answer.
    for order in ((old, r), (r, old)):
        fresh = [store.connect(f"unix://{c.get_connection_kwargs()['path']}") for c in order]
        answers = [durable.waitaof_supported(client) for client in fresh]
        assert answers == [client is r for client in order]
        for client in fresh:
            client.close()


def test_waitaof_is_probed_once_per_pool(old: redis.Redis) -> None:
    fresh = store.connect(f"unix://{old.get_connection_kwargs()['path']}")
    fresh.ping()  # the connection's own handshake is not the probe
    with store.round_trips() as first:
        assert durable.waitaof_supported(fresh) is False
    same_pool = redis.Redis(connection_pool=fresh.connection_pool)
    with store.round_trips() as later:
        assert durable.waitaof_supported(fresh) is False
        assert durable.waitaof_supported(same_pool) is False
    assert (first.count, later.count) == (1, 0)
    fresh.close()


# --- booking --------------------------------------------------------------------------------


def test_a_claim_confirms_in_one_call_without_waitaof_and_is_in_the_aof(
    old: redis.Redis, redis70_dir: Path
) -> None:
    durable.waitaof_supported(old)  # the probe is once per pool, not part of a claim
    with store.round_trips() as trips:
        result = claim(old, "B")
    assert trips.count == 2, "the function call and the index write, no WAITAOF"
    assert result.ok and result.booking is not None
    booking = result.booking
    assert bookings.booking_get(client=old, booking_id=booking.id) == booking
    # appendfsync always: the server wrote (and fsynced) the claim before it answered.
    assert booking.id.encode() in aof_bytes(redis70_dir)


def test_a_retried_claim_is_the_same_booking_and_a_rival_is_refused(old: redis.Redis) -> None:
    req = request("C", hour_start=8, hour_end=9, boxes=[1])
    booking_id = booking_new_id(room=7)
    first = booking_claim(client=old, owner_id=BUYER, request=req, booking_id=booking_id, now=NOW)
    again = booking_claim(client=old, owner_id=BUYER, request=req, booking_id=booking_id, now=NOW)
    assert first.ok and again.ok and again.booking == first.booking
    assert old.scard(RoomKeys(7).ledger) == 1 and old.hlen(RoomKeys(7).codes) == 1
    with pytest.raises(ValueError, match="another owner"):
        booking_claim(
            client=old, owner_id=SECOND_BUYER, request=req, booking_id=booking_id, now=NOW
        )
    rival = claim(old, "C", owner=SECOND_BUYER, hour_start=8, hour_end=9, boxes=[1, 2])
    assert not rival.ok and [(s.hour, s.box) for s in rival.taken] == [(8, 1)]
    assert len(audit.audit_entries(client=old, kind="claim")) == 1


def test_a_hold_keeps_slots_for_its_holder_and_converts(old: redis.Redis) -> None:
    req = request("C", hour_start=8, hour_end=10, boxes=[3])
    hold_id = hold_new_id(room=7)
    held = booking_hold(
        client=old, owner_id=BUYER, request=req, hold_id=hold_id, ttl_seconds=60, now=NOW
    )
    assert held.ok and held.hold is not None
    assert (
        booking_hold(
            client=old, owner_id=BUYER, request=req, hold_id=hold_id, ttl_seconds=60, now=NOW
        )
        == held
    ), "a retried hold is the same hold"
    assert bookings.hold_get(client=old, hold_id=hold_id, now=NOW) == held.hold
    assert 0 < old.pttl(RoomKeys(7).holds) <= 60_000
    theirs = free_boxes(
        client=old, room=7, date=day(3), hours=(8, 10), owner_id=SECOND_BUYER, now=NOW
    )
    assert 3 not in theirs
    refused = claim(old, "C", owner=SECOND_BUYER, hour_start=9, hour_end=10, boxes=[3])
    assert not refused.ok and refused.taken[0].held
    assert booking_claim(
        client=old, owner_id=BUYER, request=req, booking_id=booking_new_id(room=7),
        hold_id=hold_id, now=NOW,
    ).ok  # fmt: skip
    assert not old.exists(RoomKeys(7).holds)
    other = hold_new_id(room=7)
    booking_hold(client=old, owner_id=BUYER, request=request("A"), hold_id=other, now=NOW)
    assert not booking_hold_release(client=old, owner_id=SECOND_BUYER, hold_id=other)
    assert booking_hold_release(client=old, owner_id=BUYER, hold_id=other)


def test_cancel_frees_the_slots_and_a_second_cancel_says_so(old: redis.Redis) -> None:
    mine = booked(old, "B", hour_start=8, hour_end=10)
    before = dt.datetime(2026, 12, 2, 12, 0, tzinfo=SHANGHAI)
    forbidden = booking_cancel(
        client=old, booking_id=mine.id, actor_id=SECOND_BUYER, actor_is_staff=False, now=before
    )
    assert forbidden.outcome == "forbidden"
    done = booking_cancel(
        client=old, booking_id=mine.id, actor_id=BUYER, actor_is_staff=False, now=before,
        request_id="a" * 32,
    )  # fmt: skip
    assert done.ok and done.booking is not None and done.booking.status == "cancelled"
    repeat = booking_cancel(
        client=old, booking_id=mine.id, actor_id=BUYER, actor_is_staff=False, now=before,
        request_id="a" * 32,
    )  # fmt: skip
    assert repeat.outcome == "cancelled", "the same request again answers the same"
    again = booking_cancel(
        client=old, booking_id=mine.id, actor_id=BUYER, actor_is_staff=False, now=before
    )
    assert again.outcome == "already_cancelled"
    assert free_hours(client=old, room=7, date=day(3), cls="B") == list(range(24))
    assert not old.exists(RoomKeys(7).inventory("B", "2026-12")), (
        "an emptied inventory key is deleted"
    )


def test_waits_outbox_and_account_deletion_on_redis_7_0(old: redis.Redis) -> None:
    from booking.engine.owners import owner_forget
    from booking.engine.waits import Wait, wait_join, waits_of
    from booking.engine.waits_upkeep import waits_sweep
    from strongroom.outbox import outbox_pending

    mine = booked(old, "B", hour_start=8, hour_end=10)
    before = dt.datetime(2026, 12, 2, 12, 0, tzinfo=SHANGHAI)
    wait = Wait(7, "B", day(3), (8, 9))
    assert wait_join(client=old, owner_id=SECOND_BUYER, wait=wait, now=before) == "ok"
    assert booking_cancel(
        client=old, booking_id=mine.id, actor_id=BUYER, actor_is_staff=False, now=before
    ).ok
    (told,) = waits_of(client=old, owner_id=SECOND_BUYER, now=before)
    assert told.told and told.mine
    kinds = sorted(p.kind for p in outbox_pending(client=old))
    assert kinds == ["cancel", "confirm", "freed"]
    assert waits_sweep(client=old, now=before) == 0
    other = booked(old, "A", owner=SECOND_BUYER)
    assert owner_forget(client=old, owner_id=SECOND_BUYER, now=before) == 1
    gone = bookings.booking_get(client=old, booking_id=other.id)
    assert gone is not None and gone.status == "cancelled" and gone.owner_id == "0"


def test_pickup_collects_once_and_wrong_codes_are_slowed(
    old: redis.Redis, settings: LazySettings
) -> None:
    booking = booked(old, "A")
    on_the_day = dt.datetime(2026, 12, 3, 9, 0, tzinfo=SHANGHAI)
    wrong = booking_pickup(client=old, room=8, code=booking.pickup_code(), now=on_the_day)
    assert wrong.outcome == "wrong_code"
    collected = booking_pickup(client=old, room=7, code=booking.pickup_code(), now=on_the_day)
    assert collected.ok and collected.booking is not None
    assert collected.booking.status == "collected"
    twice = booking_pickup(client=old, room=7, code=booking.pickup_code(), now=on_the_day)
    assert twice.outcome == "already_collected"
    for _ in range(settings.STRONGROOM_PICKUP_FREE_MISSES):
        booking_pickup(client=old, room=9, code="ABCDE-FGHJK", now=on_the_day)
    slowed = booking_pickup(client=old, room=9, code="ABCDE-FGHJK", now=on_the_day)
    assert slowed.outcome == "wrong_code" and slowed.retry_after == 1
    kinds = [e.kind for e in audit.booking_audit(client=old, booking_id=booking.id)]
    assert kinds == ["pickup", "claim"]


def test_availability_occupancy_and_bookings_between(old: redis.Redis) -> None:
    a = booked(old, "A", room=200, dates=(5, 6))
    b = booked(old, "B", room=3, dates=(5,))
    c = booked(old, "C", room=1, dates=(5, 7), hour_start=1, hour_end=3, boxes=[1, 2])
    days = calendar_days(client=old, cls="A", room=200, now=NOW)
    assert [d.state for d in days[3:7]] == ["available", "sold_out", "sold_out", "available"]
    assert free_hours(client=old, room=3, date=day(5), cls="B") == [
        *range(8), *range(12, 24)
    ]  # fmt: skip
    boxes = free_boxes(client=old, room=1, date=day(5), hours=(2, 3))
    assert 1 not in boxes and 2 not in boxes and 3 in boxes
    occupancy = stats.occupancy_per_day(client=old, cls="C")
    per_day = {row.date.day: row.booked for row in occupancy.days}
    assert (per_day[5], per_day[6], per_day[7], occupancy.booked) == (4, 0, 4, 8)
    assert stats.occupancy_per_day(client=old, cls="B").booked == 4
    between = bookings.bookings_between(client=old, start=day(5), end=day(7))
    assert [x.id for x in between] == [a.id, b.id, c.id]
    only_c = bookings.bookings_between(client=old, start=day(1), end=day(31), cls="C")
    assert [x.id for x in only_c] == [c.id]
    assert {x.id for x in bookings.bookings_of(client=old, owner_id=BUYER)} == {a.id, b.id, c.id}
    assert {k.cls for k in bitmap.inventory_keys(client=old)} == {"A", "B", "C"}


def test_a_staff_flush_removes_inventory_and_cancels_bookings(old: redis.Redis) -> None:
    claim(old, "A", room=4)
    claim(old, "B", room=5)
    result = inventory_flush(client=old, actor_id=STAFF, reason="season reset")
    assert (result.keys_removed, result.bookings_cancelled) == (2, 2)
    assert bitmap.inventory_keys(client=old) == []
    assert stats.occupancy_per_day(client=old, cls="A").booked == 0


def test_confirmed_claims_survive_kill_9_of_redis_7_0(tmp_path: Path) -> None:
    data_dir = tmp_path / "redis70"
    client = store.connect(start_redis(data_dir))
    store.load_functions(client)
    requests = [
        request("B", room=room, dates=(4,), hour_start=hour, hour_end=hour + 1)
        for room in range(1, 5)
        for hour in range(10)
    ]

    def confirm(req: object) -> str:
        result = booking_claim(
            client=client, owner_id=BUYER, request=req,  # type: ignore[arg-type]
            booking_id=booking_new_id(room=req.room), now=NOW,  # type: ignore[attr-defined]
        )  # fmt: skip
        assert result.ok and result.booking is not None
        return result.booking.id

    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            confirmed = list(pool.map(confirm, requests))
        pid = embedded.server_pid(data_dir)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while embedded.answers(data_dir) and time.monotonic() < deadline:
            time.sleep(0.02)
        client.close()
        client = store.connect(start_redis(data_dir))
        assert embedded.server_pid(data_dir) != pid
        for booking_id in confirmed:
            found = bookings.booking_get(client=client, booking_id=booking_id)
            assert found is not None and found.status == "confirmed"
        assert stats.occupancy_per_day(client=client, cls="B").booked == len(requests)
    finally:
        client.close()
        embedded.stop(data_dir)


# --- catalog --------------------------------------------------------------------------------


def test_catalog_add_edit_delete_and_a_query_with_and_or_not_and_facets(
    old: redis.Redis,
) -> None:
    books = [
        ("b1", "Programming Ruby", 2004, ["ruby", "web"]),
        ("b2", "Rails Recipes", 2006, ["ruby", "rails", "web"]),
        ("b3", "Erlang Programming", 2009, ["erlang", "web"]),
        ("b4", "The Little Schemer", 1974, ["scheme", "机器学习", "a:b"]),
    ]
    versions = {}
    for book_id, title, year, tags in books:
        versions[book_id] = book_add(
            client=old, book_id=book_id, title=title, author="A. Writer", year=year, tags=tags
        )
    assert_catalog_exact(old)
    page = catalog_page(
        client=old, query=Query(all_of=("web",), any_of=("ruby", "erlang"), none_of=("rails",))
    )
    assert [b.id for b in page.books] == ["b3", "b1"] and page.total == 2
    facets = {f.tag: f.count for f in page.facets}
    assert facets["web"] == 2 and facets["ruby"] == 1 and facets["erlang"] == 1
    by_year = catalog_page(client=old, query=Query(none_of=("web",), sort="-year"))
    assert [b.id for b in by_year.books] == ["b4"]
    assert catalog_page(client=old, query=Query(all_of=("a:b",))).total == 1
    # A result that is a large share of the catalog is paged by walking the order (SMISMEMBER);
    # a small one by ZINTERSTORE (above); facets counted with SINTERCARD ... LIMIT.
    walked = [
        catalog_page(client=old, query=Query(any_of=("web",), page=n), page_size=1, facet_limit=1)
        for n in (1, 2, 3)
    ]
    assert [[b.id for b in p.books] for p in walked] == [["b3"], ["b1"], ["b2"]]
    assert {(f.tag, f.count, f.capped) for f in walked[0].facets} >= {("web", 1, True)}

    new_version = book_edit(
        client=old, book_id="b1", expected_version=versions["b1"], token="t" * 32,
        title="Programming Ruby 1.9", author="A. Writer", year=2009, tags=["ruby", "rails"],
    )  # fmt: skip
    edited = book_get(client=old, book_id="b1")
    assert edited is not None and edited.version == new_version and edited.tags == ("ruby", "rails")
    with pytest.raises(BookStale):
        book_edit(
            client=old, book_id="b1", expected_version=versions["b1"], token="u" * 32,
            title="Lost update", author="B", year=2010, tags=["ruby"],
        )  # fmt: skip
    assert dict(tags_with_counts(client=old))["rails"] == 2
    assert book_delete(client=old, book_id="b2", audit_actor=STAFF)
    assert not book_delete(client=old, book_id="b2")
    assert_catalog_exact(old)
    assert dict(tags_with_counts(client=old)) == {
        "ruby": 1, "rails": 1, "web": 1, "erlang": 1, "scheme": 1, "机器学习": 1, "a:b": 1
    }  # fmt: skip
    assert [e.kind for e in staff_audit_entries(client=old)] == ["book_delete"]


# --- accounts -------------------------------------------------------------------------------


def test_sign_up_login_and_visits_and_their_read_side(old: redis.Redis) -> None:
    anna = person_create(client=old, username="Anna_70", password="long-Secret-70x")
    bo = person_register(client=old, username="bo.70", password_hash=make_password("other-Pw-99"))
    assert (anna.id, bo.id) == (1, 2)
    assert people.person_find(client=old, username="anna_70") == anna
    assert people.person_count(client=old) == 2
    assert (
        login_attempt(
            client=old, username="Anna_70", password="long-Secret-70x", client_id="10.0.0.1"
        ).person
        == anna
    )
    wrong = login_attempt(client=old, username="bo.70", password="nope", client_id="10.0.0.1")
    assert wrong.person is None
    login_record(client=old, person_id=bo.id, at_ms=1_700_000_000_000)
    login_record(client=old, person_id=bo.id, at_ms=1_700_000_001_000)
    assert [(e.username, e.person_id) for e in people.logins_recent(client=old)] == [
        ("bo.70", 2), ("bo.70", 2), ("Anna_70", 1)
    ]  # fmt: skip
    assert [(e.username, e.logins) for e in people.logins_top(client=old)] == [
        ("bo.70", 2), ("Anna_70", 1)
    ]  # fmt: skip
    summary = people.login_summary(client=old, person_id=bo.id)
    assert summary is not None and summary.logins == 2
    today = dt.date(2026, 12, 3)
    for visitor in ("v1", "v2", "v1"):
        visit_record(client=old, day=today, visitor=visitor)
    visits = people.visits_by_day(client=old, start=today, end=today)[0]
    assert (visits.views, visits.visitors) == (3, 2)
    assert 0 < old.ttl(next(iter(old.scan_iter(match="*visit*views*")))) <= 400 * 86400
    assert people.person_names(client=old, person_ids=[1, 2, 3]) == {1: "Anna_70", 2: "bo.70"}


# --- dashboard ------------------------------------------------------------------------------


def test_dashboard_reads_of_redis_7_0(old: redis.Redis) -> None:
    anna = person_register(client=old, username="Anna_70", password_hash=make_password("x-Pw-7"))
    owner = str(anna.id)
    a = booked(old, "A", owner=owner, room=30)
    b = booked(old, "B", owner=owner, room=31)
    staff_audit_record(client=old, kind="staff_grant", actor_id=STAFF, subject=owner)
    on_the_day = dt.datetime(2026, 12, 3, 8, 0, tzinfo=SHANGHAI)
    seen = dashboard.overview(client=old, now=on_the_day)
    figures = {f.cls: (f.for_today, f.season, f.occupancy.booked) for f in seen.classes}
    assert figures == {"A": (1, 1, 1), "B": (1, 1, 4), "C": (0, 0, 0)}
    assert {x.id for x in seen.pickups} == {a.id, b.id} and seen.names == {anna.id: "Anna_70"}
    found = dashboard.bookings_filtered(
        client=old, wanted=dashboard.BookingFilter(start=day(1), end=day(31), cls="B", hour=9)
    )
    assert [x.id for x in found.bookings] == [b.id] and found.names == {anna.id: "Anna_70"}
    heat = occupancy_map(client=old, cls="B", date=day(3), floor=2)
    assert heat.summary and heat.detail
    kinds = [e.kind for e in dashboard.audit_log(client=old)]
    assert sorted(kinds) == ["claim", "claim", "staff_grant"]
    assert [e.kind for e in dashboard.booking_trail(client=old, booking=a)] == ["claim"]
    stats = keyspace_stats(old)
    assert sum(s.count for s in stats) == old.dbsize(), "every key is counted"
    assert all(s.count == 0 for s in stats if s.family is None), "every key is declared"
    assert sum(s.approx_bytes for s in stats) > 0, "MEMORY USAGE answers"
