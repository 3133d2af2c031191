"""Closures: a closed room, range or building cannot be held, booked or waited for (the
functions refuse it in the same call that checks the slot is free), bookings already inside are
listed and cancelled in one action with the reason, and reopening is one action."""

from __future__ import annotations

import datetime as dt

import redis

from booking.domain.closures import rooms_parse
from booking.domain.keys import RoomKeys
from booking.domain.rules import hold_new_id, room_count
from booking.engine.bookings import booking_get
from booking.engine.closures import (
    Closure,
    closure_add,
    closure_bookings,
    closure_bookings_cancel,
    closure_new_id,
    closure_remove,
    closures_list,
)
from booking.engine.holds import booking_hold
from booking.engine.stats import occupancy_per_day, season_stats
from booking.engine.waits import Wait, wait_join
from strongroom.audit import staff_audit_entries
from strongroom.decoders import text_stream
from tests.booking_support import BUYER, NOW, SECOND_BUYER, STAFF, claim, day, request, snapshot


def close(
    r: redis.Redis,
    rooms: str,
    first: int,
    last: int,
    hours: tuple[int, int] | None = None,
    reason: str = "repair",
) -> Closure:
    parsed = rooms_parse(rooms)
    assert parsed is not None
    return closure_add(
        client=r, actor_id=STAFF,
        closure=Closure(closure_new_id(), parsed, day(first), day(last), hours, reason),
    )  # fmt: skip


def test_rooms_are_read_as_one_a_range_a_list_or_the_building() -> None:
    assert rooms_parse("7") == (7,)
    assert rooms_parse("005-007, 9") == (5, 6, 7, 9)
    assert rooms_parse("all") == tuple(range(1, room_count() + 1))
    assert rooms_parse("0") is None and rooms_parse("7-5") is None and rooms_parse("x") is None
    assert rooms_parse(f"{room_count() + 1}") is None


def test_a_closed_slot_cannot_be_held_booked_or_waited_for_and_reopens(r: redis.Redis) -> None:
    closure = close(r, "5-7", 10, 12, reason="safe under repair")
    before = snapshot(r)
    refused = claim(r, request("A", room=6, dates=(11,)))
    assert not refused.ok and refused.closed == "safe under repair"
    held = booking_hold(
        client=r, owner_id=BUYER, request=request("B", room=7, dates=(12,), hour_start=8,
                                                  hour_end=9),
        hold_id=hold_new_id(room=7), now=NOW,
    )  # fmt: skip
    assert not held.ok and held.closed == "safe under repair"
    wait = Wait(5, "A", day(10))
    assert wait_join(client=r, owner_id=BUYER, wait=wait, now=NOW) == "closed"
    assert snapshot(r) == before, "a refusal writes nothing"
    # Other rooms and other days are open.
    assert claim(r, request("A", room=8, dates=(11,))).ok
    assert claim(r, request("A", room=6, dates=(13,))).ok
    # Reopening is one action; then the slot sells.
    assert closure_remove(client=r, actor_id=STAFF, closure_id=closure.id)
    assert closures_list(client=r) == []
    assert claim(r, request("A", room=6, dates=(11,))).ok
    kinds = [e.kind for e in staff_audit_entries(client=r)]
    assert "closure_add" in kinds and "closure_remove" in kinds


def test_an_hours_closure_closes_those_hours_of_b_and_c_and_the_whole_day_of_a(
    r: redis.Redis,
) -> None:
    close(r, "9", 15, 15, hours=(8, 12), reason="inspection")
    assert claim(r, request("B", room=9, dates=(15,), hour_start=11, hour_end=13)).closed
    assert claim(r, request("C", room=9, dates=(15,), hour_start=8, hour_end=9, boxes="4")).closed
    assert claim(r, request("A", room=9, dates=(15,))).closed == "inspection"
    assert claim(r, request("B", room=9, dates=(15,), hour_start=12, hour_end=14)).ok


def test_bookings_inside_a_new_closure_are_listed_and_cancelled_with_the_reason(
    r: redis.Redis,
) -> None:
    inside = claim(r, request("B", room=3, dates=(20, 21), hour_start=9, hour_end=10)).booking
    other = claim(r, request("B", room=3, dates=(21,), hour_start=14, hour_end=15),
                  owner=SECOND_BUYER).booking  # fmt: skip
    outside = claim(r, request("A", room=4, dates=(20,))).booking
    assert inside and other and outside
    closure = Closure(closure_new_id(), (3,), day(21), day(21), (8, 12), "holiday")
    listed = closure_bookings(client=r, closure=closure)
    assert [b.id for b in listed] == [inside.id]
    closure = closure_add(client=r, actor_id=STAFF, closure=closure)
    assert (
        closure_bookings_cancel(
            client=r, actor_id=STAFF, closure=closure, booking_ids=[b.id for b in listed]
        )
        == 1
    )
    gone = booking_get(client=r, booking_id=inside.id)
    assert gone is not None and gone.status == "cancelled" and gone.cancel_reason == "holiday"
    # The buyer is told: the cancellation mail is queued in the room's outbox.
    assert any(m.startswith(f"cancel|{inside.id}") for m in queued_mail(r, 3))
    kept = booking_get(client=r, booking_id=other.id)
    assert kept is not None and kept.status == "confirmed"
    assert closure_bookings(client=r, closure=closure) == []
    assert closure.whole_building is False and closure.rooms_label == "003"
    assert isinstance(closure.at, dt.datetime)


def test_closed_slots_are_not_capacity_in_the_occupancy_figures(r: redis.Redis) -> None:
    assert claim(r, request("B", room=2, dates=(5,), hour_start=8, hour_end=10)).ok
    before = {d.date: d for d in occupancy_per_day(client=r, cls="B").days}
    close(r, "1-3", 5, 6, hours=(8, 12), reason="drill")
    after = {d.date: d for d in occupancy_per_day(client=r, cls="B").days}
    full = 24 * room_count()
    assert before[day(5)].capacity == full
    assert after[day(5)].capacity == after[day(6)].capacity == full - 3 * 4
    assert after[day(7)].capacity == full and after[day(5)].booked == before[day(5)].booked == 2
    stats = {s.cls: s for s in season_stats(client=r, now=NOW).classes}
    assert stats["A"].occupancy.days[4].capacity == room_count() - 3
    assert stats["C"].occupancy.days[5].capacity == 2400 * room_count() - 3 * 4 * 100


def queued_mail(r: redis.Redis, room: int) -> list[str]:
    """The messages waiting in the room's outbox (a stream, field m)."""
    return [fields["m"] for _id, fields in text_stream(r.xrange(RoomKeys(room).outbox))]
