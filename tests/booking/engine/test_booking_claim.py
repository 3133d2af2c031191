"""Claims, holds, availability, indexes, audit, flush: on the real store."""

from __future__ import annotations

import datetime as dt
import os

import pytest
import redis
from django.core.management import call_command
from redis.crc import key_slot

from booking.domain.keys import (
    RoomKeys,
    date_index,
    date_indexes,
    date_member,
    date_score,
    person_index,
)
from booking.domain.records import Booking
from booking.domain.rules import booking_new_id, hold_new_id
from booking.engine import audit, bookings, stats
from booking.engine.cancel import booking_cancel
from booking.engine.claims import booking_claim
from booking.engine.holds import booking_hold, booking_hold_release
from booking.engine.maintenance import inventory_flush
from booking.slots import bitmap
from strongroom import keyspace
from strongroom.store import is_cluster, primaries, primaries_reached, round_trips
from tests.booking_support import (
    BUYER,
    NOW,
    SECOND_BUYER,
    STAFF,
    calendar_days,
    claim,
    day,
    free_boxes,
    free_hours,
    product_keys,
    request,
    snapshot,
)
from tests.store_support import store_probed


def test_a_claim_confirms_a_booking_with_every_field(r: redis.Redis) -> None:
    req = request("C", room=12, dates=(3, 4), hour_start="08:00", hour_end="12:00", boxes="5,6")
    result = claim(r, req)
    assert result.ok and not result.taken
    booking = result.booking
    assert booking is not None
    assert (booking.owner_id, booking.cls, booking.room, booking.room_label) == (
        BUYER,
        "C",
        12,
        "012",
    )
    assert booking.dates == (day(3), day(4)) and booking.hours == (8, 12)
    assert booking.boxes == (5, 6) and booking.status == "confirmed"
    assert booking.created_at == NOW
    assert len(booking.pickup_code()) == 10
    assert bookings.booking_get(client=r, booking_id=booking.id) == booking


def test_a_claim_is_one_durable_call_plus_one_index_write(r: redis.Redis) -> None:
    req = request("B", hour_start=8, hour_end=10)
    store_probed(r)  # asked of the store once per client, not in the counted call
    with round_trips() as trips:
        assert claim(r, req).ok
    # The index write reaches the person's and the date shard's primaries (one on one server).
    index_write = primaries_reached(r, [person_index(BUYER), date_index(req.room)])
    # On a cluster the entries are on other primaries than the room: its `unindexed` set is
    # emptied after they are written, in a round trip of its own.
    unindexed = 1 if is_cluster(r) else 0
    assert trips.count == 1 + index_write + unindexed


def test_the_second_buyer_of_the_same_hour_is_refused_with_the_taken_slots(
    r: redis.Redis,
) -> None:
    assert claim(r, request("B", hour_start=8, hour_end=12)).ok
    before = snapshot(r)
    result = claim(r, request("B", hour_start=11, hour_end=14), owner=SECOND_BUYER)
    assert not result.ok and result.booking is None
    assert [(s.date, s.hour, s.box, s.held) for s in result.taken] == [(day(3), 11, None, False)]
    assert snapshot(r) == before, "a refusal writes nothing"
    assert claim(r, request("B", hour_start=12, hour_end=14), owner=SECOND_BUYER).ok


def test_classes_and_rooms_and_boxes_are_independent_inventories(r: redis.Redis) -> None:
    assert claim(r, request("A")).ok
    assert not claim(r, request("A"), owner=SECOND_BUYER).ok
    assert claim(r, request("A", room=8), owner=SECOND_BUYER).ok
    assert claim(r, request("B", hour_start=0, hour_end=24), owner=SECOND_BUYER).ok
    assert claim(r, request("C", hour_start=0, hour_end=24, boxes=[1])).ok
    taken = claim(r, request("C", hour_start=5, hour_end=6, boxes=[1, 2]), owner=SECOND_BUYER)
    assert [(s.hour, s.box) for s in taken.taken] == [(5, 1)]
    assert claim(r, request("C", hour_start=5, hour_end=6, boxes=[2]), owner=SECOND_BUYER).ok


def test_a_multi_slot_claim_is_all_or_nothing(r: redis.Redis) -> None:
    assert claim(r, request("A", dates=(5,))).ok
    result = claim(r, request("A", dates=(3, 4, 5, 6)), owner=SECOND_BUYER)
    assert not result.ok and [s.date for s in result.taken] == [day(5)]
    days = calendar_days(client=r, cls="A", room=7, now=NOW)
    assert [d.state for d in days[2:6]] == ["available", "available", "sold_out", "available"]


def test_a_retried_claim_with_the_same_id_returns_the_same_booking(r: redis.Redis) -> None:
    req = request("C", hour_start=8, hour_end=9, boxes=[1])
    booking_id = booking_new_id(room=7)
    first = booking_claim(client=r, owner_id=BUYER, request=req, booking_id=booking_id, now=NOW)
    again = booking_claim(client=r, owner_id=BUYER, request=req, booking_id=booking_id, now=NOW)
    assert first.ok and again.ok and again.booking == first.booking
    assert again.booking is not None and first.booking is not None
    assert again.booking.pickup_code() == first.booking.pickup_code()
    assert len(bookings.bookings_of(client=r, owner_id=BUYER)) == 1
    assert r.scard(RoomKeys(7).ledger) == 1 and r.hlen(RoomKeys(7).codes) == 1
    assert stats.occupancy_per_day(client=r, cls="C").booked == 1
    assert len(audit.audit_entries(client=r, kind="claim")) == 1


def test_another_owner_cannot_reuse_a_booking_id(r: redis.Redis) -> None:
    booking_id = booking_new_id(room=7)
    booking_claim(client=r, owner_id=BUYER, request=request(), booking_id=booking_id, now=NOW)
    with pytest.raises(ValueError, match="another owner"):
        booking_claim(
            client=r,
            owner_id=SECOND_BUYER,
            request=request(dates=(9,)),
            booking_id=booking_id,
            now=NOW,
        )


def test_ids_of_another_room_and_odd_owner_ids_are_refused_before_any_write(
    r: redis.Redis,
) -> None:
    with pytest.raises(ValueError):
        booking_claim(
            client=r,
            owner_id=BUYER,
            request=request(room=7),
            booking_id=booking_new_id(room=8),
            now=NOW,
        )
    for owner in ["", "a:b", "{x}", "a b", "*", "x" * 65, "é"]:
        with pytest.raises(ValueError):
            claim(r, request(), owner=owner)
    assert product_keys(r) == []


# --- Holds ---------------------------------------------------------------------------------


def test_a_hold_refuses_other_buyers_and_converts_for_its_holder(r: redis.Redis) -> None:
    req = request("C", hour_start=8, hour_end=10, boxes=[3])
    hold_id = hold_new_id(room=7)
    held = booking_hold(
        client=r, owner_id=BUYER, request=req, hold_id=hold_id, ttl_seconds=60, now=NOW
    )
    assert held.ok and held.hold is not None
    assert held.hold.expires_at == NOW + dt.timedelta(seconds=60)
    assert bookings.hold_get(client=r, hold_id=hold_id, now=NOW) == held.hold
    other = claim(r, request("C", hour_start=9, hour_end=11, boxes=[3, 4]), owner=SECOND_BUYER)
    assert not other.ok and [(s.hour, s.box, s.held) for s in other.taken] == [(9, 3, True)]
    second_hold = booking_hold(
        client=r, owner_id=SECOND_BUYER, request=req, hold_id=hold_new_id(room=7), now=NOW
    )
    assert not second_hold.ok
    # The holder sees it free; the other buyer sees it taken.
    mine = free_boxes(client=r, room=7, date=day(3), hours=(8, 10), owner_id=BUYER, now=NOW)
    theirs = free_boxes(
        client=r, room=7, date=day(3), hours=(8, 10), owner_id=SECOND_BUYER, now=NOW
    )
    assert 3 in mine and 3 not in theirs
    converted = claim(r, req, hold_id=hold_id)
    assert converted.ok
    assert bookings.hold_get(client=r, hold_id=hold_id, now=NOW) is None
    assert not r.exists(RoomKeys(7).holds), "an empty holds hash is no key at all"


def test_a_retried_hold_is_the_same_hold(r: redis.Redis) -> None:
    hold_id = hold_new_id(room=7)
    first = booking_hold(client=r, owner_id=BUYER, request=request(), hold_id=hold_id, now=NOW)
    again = booking_hold(client=r, owner_id=BUYER, request=request(), hold_id=hold_id, now=NOW)
    assert first == again and r.hlen(RoomKeys(7).holds) == 1


def test_a_hold_ends_on_the_whole_minute_after_its_time(r: redis.Redis) -> None:
    """Placed at 10:00:30 for ten minutes, a hold ends at 10:11:00, not 10:10:30: its holder
    (told the minute it ends in) and everyone else (told the minute it is over by) read the
    same 10:11, and the room's holds keys live until then."""
    placed = NOW + dt.timedelta(seconds=30)
    held = booking_hold(
        client=r, owner_id=BUYER, request=request(), hold_id=hold_new_id(room=7),
        ttl_seconds=600, now=placed,
    )  # fmt: skip
    assert held.ok and held.hold is not None
    assert held.hold.expires_at == NOW + dt.timedelta(minutes=11)
    assert 600_000 < r.pttl(RoomKeys(7).holds) <= 630_000


def test_an_abandoned_hold_frees_itself_when_it_expires(r: redis.Redis) -> None:
    hold_id = hold_new_id(room=7)
    held = booking_hold(
        client=r, owner_id=BUYER, request=request(), hold_id=hold_id, ttl_seconds=30, now=NOW
    )
    # A hold ends on a whole minute: placed on one, a 30 s hold ends on the next.
    end = NOW + dt.timedelta(seconds=60)
    assert held.ok and held.hold is not None and held.hold.expires_at == end
    assert not claim(r, request(), owner=SECOND_BUYER).ok
    later = end + dt.timedelta(seconds=1)
    assert bookings.hold_get(client=r, hold_id=hold_id, now=later) is None
    result = booking_claim(
        client=r,
        owner_id=SECOND_BUYER,
        request=request(),
        booking_id=booking_new_id(room=7),
        now=later,
    )
    assert result.ok
    assert 0 < r.pttl(RoomKeys(7).holds) <= 60_000 or not r.exists(RoomKeys(7).holds)


def test_the_server_drops_the_holds_key_when_the_last_hold_expires(r: redis.Redis) -> None:
    import time

    booking_hold(
        client=r,
        owner_id=BUYER,
        request=request(),
        hold_id=hold_new_id(room=7),
        ttl_seconds=1,
        # A second before a whole minute: the hold ends on it, a second from now.
        now=dt.datetime.now(tz=dt.UTC).replace(second=59, microsecond=0),
    )
    assert r.exists(RoomKeys(7).holds)
    time.sleep(1.1)
    assert not r.exists(RoomKeys(7).holds)


def test_a_hold_can_be_released_by_its_owner_only(r: redis.Redis) -> None:
    hold_id = hold_new_id(room=7)
    booking_hold(client=r, owner_id=BUYER, request=request(), hold_id=hold_id, now=NOW)
    assert not booking_hold_release(client=r, owner_id=SECOND_BUYER, hold_id=hold_id)
    assert booking_hold_release(client=r, owner_id=BUYER, hold_id=hold_id)
    assert claim(r, request(), owner=SECOND_BUYER).ok


# --- Availability ----------------------------------------------------------------------------


def test_the_calendar_marks_every_day_and_says_why(r: redis.Redis) -> None:
    at = dt.datetime(2026, 12, 2, 23, 59, tzinfo=NOW.tzinfo)
    for hours in ((0, 8), (8, 24)):
        assert claim(r, request("B", dates=(10,), hour_start=hours[0], hour_end=hours[1])).ok
    assert claim(r, request("B", dates=(11,), hour_start=8, hour_end=9)).ok
    with round_trips() as trips:
        days = calendar_days(client=r, cls="B", room=7, now=at)
    assert trips.count == 1
    assert len(days) == 31 and days[0].date == day(1) and days[-1].date == day(31)
    states = {d.date.day: (d.state, d.reason) for d in days}
    assert states[1] == ("not_bookable", "past")
    assert states[2] == ("not_bookable", "today")
    assert states[3] == ("available", "")
    assert states[10] == ("sold_out", "")
    assert states[11] == ("partly", ""), "08:00-09:00 is taken, the rest of the day is free"
    narrowed = calendar_days(client=r, cls="B", room=7, hours=(8, 10), now=at)
    assert narrowed[10].state == "sold_for", "December 11: 08:00-09:00 is taken"
    month = calendar_days(
        client=r, cls="B", room=7, now=at, start=dt.date(2026, 11, 30), end=dt.date(2027, 1, 1)
    )
    assert month[0].reason == "outside_season" and month[-1].reason == "outside_season"


def test_class_c_availability_by_box_and_hours(r: redis.Redis) -> None:
    assert claim(r, request("C", hour_start=0, hour_end=24, boxes=list(range(1, 100)))).ok
    days = {d.date: d.state for d in calendar_days(client=r, cls="C", room=7)}
    assert days[day(3)] == "partly", "box 100 is still free"
    box1 = calendar_days(client=r, cls="C", room=7, boxes=[1], now=NOW)
    assert {d.date: d.state for d in box1}[day(3)] == "sold_for", "box 1 is taken, box 100 is not"
    assert claim(r, request("C", hour_start=8, hour_end=9, boxes=[100])).ok
    assert free_boxes(client=r, room=7, date=day(3), hours=(9, 10)) == [100]
    assert free_boxes(client=r, room=7, date=day(3), hours=(8, 10)) == []
    hours = free_hours(client=r, room=7, date=day(3), cls="C")
    assert hours == [h for h in range(24) if h != 8]


def test_free_hours_of_class_b_in_one_round_trip(r: redis.Redis) -> None:
    assert claim(r, request("B", hour_start=8, hour_end=12)).ok
    with round_trips() as trips:
        hours = free_hours(client=r, room=7, date=day(3), cls="B")
    assert trips.count == 1
    assert hours == [*range(8), *range(12, 24)]


def test_occupancy_counts_booked_slots_per_day_from_the_bitmaps(r: redis.Redis) -> None:
    claim(r, request("C", room=1, dates=(3, 4), hour_start=8, hour_end=12, boxes=[1, 2]))
    claim(r, request("C", room=300, dates=(4,), hour_start=0, hour_end=1, boxes=[100]))
    with round_trips() as trips:
        occupancy = stats.occupancy_per_day(client=r, cls="C")
    assert trips.count == len(primaries(r))  # every room: one round trip per primary
    per_day = {row.date.day: row.booked for row in occupancy.days}
    assert per_day[3] == 8 and per_day[4] == 9 and per_day[5] == 0
    assert occupancy.booked == 17
    assert occupancy.capacity == 300 * 31 * 24 * 100
    assert occupancy.days[0].capacity == 300 * 24 * 100


# --- Indexes and audit ------------------------------------------------------------------------


def test_bookings_of_a_person_newest_first(r: redis.Redis) -> None:
    ids = []
    for n in range(3):
        at = NOW + dt.timedelta(minutes=n)
        result = booking_claim(
            client=r,
            owner_id=BUYER,
            request=request(dates=(3 + n,)),
            booking_id=booking_new_id(room=7),
            now=at,
        )
        assert result.booking is not None
        ids.append(result.booking.id)
    claim(r, request(room=9), owner=SECOND_BUYER)
    assert [b.id for b in bookings.bookings_of(client=r, owner_id=BUYER)] == ids[::-1]
    assert [b.id for b in bookings.bookings_of(client=r, owner_id=BUYER, limit=1, offset=1)] == [
        ids[1]
    ]


def test_the_date_index_answers_ranges_and_day_plus_class(r: redis.Redis) -> None:
    a = claim(r, request("A", room=200, dates=(5, 6))).booking
    b = claim(r, request("B", room=3, dates=(5,), hour_start=1, hour_end=2)).booking
    c = claim(r, request("C", room=1, dates=(7,), hour_start=1, hour_end=2, boxes=[1])).booking
    assert a and b and c
    assert date_score(day(5), "B", 3) == 20263392003
    assert date_score(dt.date(2026, 12, 31), "C", 999) < 2**53
    between = bookings.bookings_between(client=r, start=day(5), end=day(7))
    assert [x.id for x in between] == [a.id, b.id, c.id]
    assert [x.id for x in bookings.bookings_between(client=r, start=day(6), end=day(6))] == [a.id]
    only_b = bookings.bookings_between(client=r, start=day(1), end=day(31), cls="B")
    assert [x.id for x in only_b] == [b.id]
    assert bookings.bookings_between(client=r, start=day(8), end=day(31)) == []


def test_rebuildindexes_restores_lost_indexes_from_the_records(r: redis.Redis) -> None:
    made = [claim(r, request(dates=(d,), room=d)).booking for d in (3, 4, 5)]
    before_person = bookings.bookings_of(client=r, owner_id=BUYER)
    before_dates = bookings.bookings_between(client=r, start=day(1), end=day(31))
    # A crash right after the claims: the indexes outside the room's slot never got written.
    for key in r.scan_iter(match="sr:{owner:*"):
        r.delete(key)
    for shard in date_indexes():
        r.delete(shard)
    assert bookings.bookings_of(client=r, owner_id=BUYER) == []
    call_command("rebuildindexes", verbosity=0)
    assert bookings.bookings_of(client=r, owner_id=BUYER) == before_person
    assert bookings.bookings_between(client=r, start=day(1), end=day(31)) == before_dates
    assert len(made) == 3


def test_rebuildindexes_keeps_a_claim_made_while_it_runs_and_drops_dead_entries(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    from booking.engine import maintenance

    old = claim(r, request(dates=(3,), room=3)).booking
    assert old is not None
    dead = "009-" + "a" * 26  # entries of a booking whose record does not exist
    r.zadd(date_index(9), {date_member(dead, day(9)): date_score(day(9), "A", 9)})
    r.zadd(person_index(BUYER), {dead: 1})
    during: list[Booking | None] = []
    read_records = maintenance._records

    def records_then_someone_books(*args: object, **kwargs: object) -> object:
        found = read_records(*args, **kwargs)  # type: ignore[arg-type]
        during.append(claim(r, request(dates=(4,), room=4)).booking)
        return found

    monkeypatch.setattr(maintenance, "_records", records_then_someone_books)
    assert maintenance.indexes_rebuild(client=r) == 1
    [new] = during
    assert new is not None
    mine = bookings.bookings_of(client=r, owner_id=BUYER)
    assert {b.id for b in mine} == {old.id, new.id}
    between = bookings.bookings_between(client=r, start=day(1), end=day(31))
    assert [b.id for b in between] == [old.id, new.id]
    assert r.zcard(date_index(3)) == r.zcard(date_index(4)) == 1
    assert r.zcard(date_index(9)) == 0 and r.zcard(person_index(BUYER)) == 2


def test_every_claim_cancel_and_pickup_is_audited_newest_first(r: redis.Redis) -> None:
    booking = claim(r, request()).booking
    assert booking is not None
    booking_cancel(
        client=r,
        booking_id=booking.id,
        actor_id=STAFF,
        actor_is_staff=True,
        reason="testing",
        now=NOW,
    )
    entries = audit.audit_entries(client=r)
    assert [(e.kind, e.actor, e.booking_id, e.room) for e in entries] == [
        ("cancel", STAFF, booking.id, 7),
        ("claim", BUYER, booking.id, 7),
    ]
    assert entries[0].detail == "testing" and entries[0].at == NOW
    assert [e.kind for e in audit.audit_entries(client=r, kind="claim")] == ["claim"]


def test_the_audit_stream_is_capped(r: redis.Redis, settings: object) -> None:
    settings.STRONGROOM_AUDIT_MAXLEN = 10  # type: ignore[attr-defined]
    settings.STRONGROOM_DURABILITY = "none"  # type: ignore[attr-defined]  # speed only
    for box in range(1, 101):
        for hours in ((0, 12), (12, 24)):
            claim(r, request("C", hour_start=hours[0], hour_end=hours[1], boxes=[box]))
    assert r.xlen(RoomKeys(7).audit) < 200
    assert len(audit.audit_entries(client=r, count=1000)) == r.xlen(RoomKeys(7).audit)


# --- Registry and flush -------------------------------------------------------------------


def test_empty_inventory_costs_no_keys_and_the_registry_lists_what_exists(
    r: redis.Redis,
) -> None:
    assert bitmap.inventory_keys(client=r) == []
    booking = claim(r, request("B", hour_start=1, hour_end=2)).booking
    claim(r, request("A", room=300))
    keys = bitmap.inventory_keys(client=r)
    assert [(k.room, k.cls, k.month) for k in keys] == [
        (7, "B", "2026-12"),
        (300, "A", "2026-12"),
    ]
    assert all(r.exists(k.key) for k in keys)
    assert booking is not None
    booking_cancel(client=r, booking_id=booking.id, actor_id=BUYER, actor_is_staff=False, now=NOW)
    assert [k.room for k in bitmap.inventory_keys(client=r)] == [300]
    assert not r.exists(RoomKeys(7).inventory("B", "2026-12")) and not r.exists(
        RoomKeys(7).registry
    )


def test_flush_removes_exactly_the_registered_keys_and_cancels_confirmed_bookings(
    r: redis.Redis,
) -> None:
    kept = claim(r, request("A", room=5)).booking
    cancelled_before = claim(r, request("A", room=6)).booking
    assert kept and cancelled_before
    booking_cancel(
        client=r, booking_id=cancelled_before.id, actor_id=BUYER, actor_is_staff=False, now=NOW
    )
    claim(r, request("C", room=5, hour_start=1, hour_end=3, boxes=[4]))
    r.set("sr:{room:005}:stranger", "not inventory")
    registered = {k.key for k in bitmap.inventory_keys(client=r)}
    result = inventory_flush(client=r, actor_id=STAFF, reason="end of season")
    assert result.keys_removed == len(registered) == 2
    assert result.bookings_cancelled == 2
    assert not any(r.exists(k) for k in registered)
    assert r.get("sr:{room:005}:stranger") == "not inventory"
    assert bitmap.inventory_keys(client=r) == []
    flushed = bookings.booking_get(client=r, booking_id=kept.id)
    assert flushed is not None and flushed.status == "cancelled"
    assert flushed.cancel_reason == "end of season" and flushed.cancelled_by == STAFF
    assert any(e.kind == "flush" for e in audit.audit_entries(client=r))
    assert claim(r, request("A", room=5), owner=SECOND_BUYER).ok


def test_demo_bookings_load_once_however_often_loaddemo_runs(r: redis.Redis) -> None:
    call_command("loaddemo", stdout=open(os.devnull, "w"))  # noqa: SIM115
    first = bookings.bookings_between(client=r, start=day(1), end=day(31))
    call_command("loaddemo", stdout=open(os.devnull, "w"))  # noqa: SIM115
    assert first and bookings.bookings_between(client=r, start=day(1), end=day(31)) == first
    # Marked as a first run's load marks it: a later first run of the site adds none.
    from strongroom.keyspace import DEMO_LOADED

    assert r.exists(DEMO_LOADED.key())


def test_every_key_the_engine_writes_is_a_declared_booking_family(r: redis.Redis) -> None:
    from booking.engine.pickup import booking_pickup

    booking = claim(r, request("C", hour_start=1, hour_end=2, boxes=[1])).booking
    assert booking is not None
    booking_hold(client=r, owner_id=BUYER, request=request(), hold_id=hold_new_id(room=7), now=NOW)
    for _ in range(10):
        booking_pickup(client=r, room=7, code="ABCDEFGHJK", now=NOW)
    for key in product_keys(r):
        family = keyspace.family_of(key)
        assert family is not None and family.app == "booking", key


def test_all_keys_of_one_room_share_one_cluster_slot() -> None:
    keys = RoomKeys(7)
    room_keys = [
        keys.inventory("A", "2026-12"),
        keys.inventory("C", "2026-12"),
        keys.registry,
        keys.record("007-x"),
        keys.ledger,
        keys.codes,
        keys.holds,
        keys.hold_days,
        keys.unindexed,
        keys.pickup_failures("203.0.113.9"),
        keys.pickup_failures("2001:db8::1"),
        keys.audit,
    ]
    assert len({key_slot(k.encode()) for k in room_keys}) == 1
    assert key_slot(RoomKeys(8).ledger.encode()) != key_slot(keys.ledger.encode())


def test_flushing_many_rooms_is_two_round_trips_per_primary(
    r: redis.Redis, settings: object
) -> None:
    for room in range(1, 41):
        settings.STRONGROOM_DURABILITY = "none"  # type: ignore[attr-defined]  # quick set-up
        claim(r, request("A", room=room))
    settings.STRONGROOM_DURABILITY = "aof"  # type: ignore[attr-defined]
    with round_trips() as trips:
        result = inventory_flush(client=r, actor_id=STAFF, reason="season over")
    # Read every room, then the 40 rooms' calls with one WAITAOF per primary they reach.
    flushed = primaries_reached(r, [RoomKeys(room).ledger for room in range(1, 41)])
    assert trips.count == len(primaries(r)) + flushed
    assert result.keys_removed == 40 and result.bookings_cancelled == 40


def test_a_room_that_changed_since_it_was_read_is_not_flushed_blindly(r: redis.Redis) -> None:
    booking = claim(r, request("A")).booking
    assert booking is not None
    keys = RoomKeys(7)
    before = snapshot(r)
    # What a flush would send had it read the room before this booking existed.
    stale = r.fcall(
        "booking_flush_room",
        5 + 1,
        keys.registry,
        keys.ledger,
        keys.holds,
        keys.audit,
        keys.hold_days,
        keys.inventory("A", "2026-12"),
        STAFF,
        "stale",
        0,
        1000,
        1,
        0,
        "007",
    )
    assert stale == ["retry"]
    assert snapshot(r) == before


def test_a_claim_of_more_fields_than_one_bitfield_call_takes_them_all(
    r: redis.Redis,
) -> None:
    """100 boxes on 12 days are 1,200 fields of one month's bitmap: read and written in two
    BITFIELD calls, every one taken, and every one given back by the cancel."""
    big = request("C", room=40, dates=range(5, 17), hour_start=8, hour_end=9,
                  boxes=range(1, 101))  # fmt: skip
    made = claim(r, big)
    assert made.ok and made.booking is not None
    again = claim(r, request("C", room=40, dates=range(5, 17), hour_start=8, hour_end=9,
                             boxes=range(1, 101)), owner=SECOND_BUYER)  # fmt: skip
    assert not again.ok and len(again.taken) == 1200
    assert {(s.date.day, s.box) for s in again.taken} == {
        (d, b) for d in range(5, 17) for b in range(1, 101)
    }
    assert booking_cancel(
        client=r, booking_id=made.booking.id, actor_id=BUYER, actor_is_staff=False, now=NOW
    ).ok
    assert claim(r, big, owner=SECOND_BUYER).ok
