"""The pickup desk: what is due on a day in a range of rooms, and the hand-over without a code."""

from __future__ import annotations

import datetime as dt

import redis

from booking.domain.keys import RoomKeys
from booking.engine import audit, stats
from booking.engine.desk import booking_handover, desk_read
from booking.engine.pickup import booking_pickup
from tests.booking_support import SECOND_BUYER, SHANGHAI, STAFF, claim, day, request

ON_THE_DAY = dt.datetime(2026, 12, 3, 9, 0, tzinfo=SHANGHAI)


def test_the_desk_lists_the_days_bookings_in_the_rooms_with_live_counts(r: redis.Redis) -> None:
    a = claim(r, request("A", room=7)).booking
    b = claim(r, request("B", room=9, hour_start=8, hour_end=12), owner=SECOND_BUYER).booking
    c = claim(r, request("C", room=8, hour_start=8, hour_end=10, boxes=[4, 5])).booking
    claim(r, request("A", room=40))  # outside the range
    claim(r, request("A", room=7, dates=(4,)))  # another day
    assert a and b and c
    assert booking_pickup(client=r, room=7, code=a.pickup_code(), now=ON_THE_DAY).ok
    desk = desk_read(client=r, day=day(3), first_room=1, last_room=20)
    assert [row.booking.id for row in desk.rows] == [a.id, c.id, b.id]
    assert [row.collected for row in desk.rows] == [True, False, False]
    assert (desk.due, desk.collected, desk.left) == (3, 1, 2)


def test_a_handover_collects_today_audits_the_staff_and_the_note_and_kills_the_code(
    r: redis.Redis,
) -> None:
    mine = claim(r, request("B", hour_start=8, hour_end=12)).booking
    assert mine is not None
    result = booking_handover(
        client=r, booking_id=mine.id, actor_id=STAFF, note="ID card checked", now=ON_THE_DAY,
        request_id="handover-request-01",
    )  # fmt: skip
    assert result.ok and result.booking is not None and result.booking.status == "collected"
    again = booking_handover(
        client=r, booking_id=mine.id, actor_id=STAFF, now=ON_THE_DAY,
        request_id="handover-request-01",
    )  # fmt: skip
    assert again.outcome == "handed"
    other = booking_handover(client=r, booking_id=mine.id, actor_id=STAFF, now=ON_THE_DAY)
    assert other.outcome == "already_collected"
    entry = audit.booking_audit(client=r, booking_id=mine.id)[0]
    assert (entry.kind, entry.actor, entry.detail) == (
        "handover",
        STAFF,
        "2026-12-03 ID card checked",
    )
    # The code no longer opens anything; its owner typing it is told it was handed over at the
    # desk (it was "wrong code" and counted as a guess).
    code = booking_pickup(
        client=r, room=7, code=mine.pickup_code(), now=ON_THE_DAY, client_id="kiosk-1"
    )
    assert not code.ok and code.outcome == "already_collected"
    assert "handed over at the desk" in str(code.message) and code.retry_after == 0
    assert not r.exists(RoomKeys(7).pickup_failures("kiosk-1"))
    live = r.hgetall(RoomKeys(7).stats)
    stats.stats_rebuild(client=r, rooms=[7])
    assert r.hgetall(RoomKeys(7).stats) == live


def test_only_todays_confirmed_bookings_are_handed_over(r: redis.Redis) -> None:
    later = claim(r, request("A", dates=(5,))).booking
    assert later is not None
    early = booking_handover(client=r, booking_id=later.id, actor_id=STAFF, now=ON_THE_DAY)
    assert early.outcome == "not_today"
    assert booking_handover(client=r, booking_id="007-nope", actor_id=STAFF).outcome == "not_found"
    assert booking_handover(client=r, booking_id="garbage", actor_id=STAFF).outcome == "not_found"
