"""Cancel and pickup rules: who may cancel when; pickup on the day, in the hours, once."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import redis

from booking.domain.keys import RoomKeys
from booking.domain.records import Booking
from booking.domain.rules import booking_new_id
from booking.engine import audit, bookings, stats
from booking.engine.cancel import booking_cancel
from booking.engine.claims import booking_claim
from booking.engine.pickup import booking_pickup
from tests.booking_support import (
    BUYER,
    NOW,
    SECOND_BUYER,
    SHANGHAI,
    STAFF,
    claim,
    day,
    free_hours,
    product_keys,
    request,
    snapshot,
)


def booked(r: redis.Redis, cls: str = "B", dates: tuple[int, ...] = (3,), **extra: Any) -> Booking:
    if cls == "B":
        extra = {"hour_start": 8, "hour_end": 12, **extra}
    result = claim(r, request(cls, dates=dates, **extra))
    assert result.ok and result.booking is not None
    return result.booking


def at(day_number: int, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 12, day_number, hour, minute, tzinfo=SHANGHAI)


# --- Cancel ---------------------------------------------------------------------------------


def test_the_owner_cancels_before_the_first_day_and_exactly_its_slots_are_freed(
    r: redis.Redis,
) -> None:
    mine = booked(r, hour_start=8, hour_end=10)
    theirs = claim(r, request("B", hour_start=10, hour_end=12), owner=SECOND_BUYER).booking
    assert theirs is not None
    result = booking_cancel(
        client=r, booking_id=mine.id, actor_id=BUYER, actor_is_staff=False, now=at(2, 23, 59)
    )
    assert result.ok and result.outcome == "cancelled"
    assert result.booking is not None and result.booking.status == "cancelled"
    free = free_hours(client=r, room=7, date=day(3), cls="B")
    assert 8 in free and 9 in free and 10 not in free and 11 not in free
    assert stats.occupancy_per_day(client=r, cls="B").booked == 2
    assert claim(r, request("B", hour_start=8, hour_end=10), owner=SECOND_BUYER).ok


def test_cancelling_twice_says_it_is_already_cancelled(r: redis.Redis) -> None:
    booking = booked(r)
    booking_cancel(client=r, booking_id=booking.id, actor_id=BUYER, actor_is_staff=False, now=NOW)
    again = booking_cancel(
        client=r, booking_id=booking.id, actor_id=BUYER, actor_is_staff=False, now=NOW
    )
    assert not again.ok and again.outcome == "already_cancelled"
    assert "already cancelled" in str(again.message)


def test_the_owner_cannot_cancel_on_or_after_the_first_day_but_staff_can(r: redis.Redis) -> None:
    booking = booked(r, dates=(3, 4))
    late = booking_cancel(
        client=r, booking_id=booking.id, actor_id=BUYER, actor_is_staff=False, now=at(3, 0, 0)
    )
    assert not late.ok and late.outcome == "started"
    by_staff = booking_cancel(
        client=r, booking_id=booking.id, actor_id=STAFF, actor_is_staff=True, reason="leak",
        now=at(3, 9, 0),
    )  # fmt: skip
    assert by_staff.ok and by_staff.booking is not None
    assert by_staff.booking.cancelled_by == STAFF and by_staff.booking.cancel_reason == "leak"


def test_nobody_else_can_cancel_a_booking(r: redis.Redis) -> None:
    booking = booked(r)
    before = snapshot(r)
    result = booking_cancel(
        client=r, booking_id=booking.id, actor_id=SECOND_BUYER, actor_is_staff=False, now=NOW
    )
    assert not result.ok and result.outcome == "forbidden" and result.booking is None
    assert snapshot(r) == before


@pytest.mark.parametrize(
    "bad_id", ["", "nope", "007-" + "a" * 26, "301-" + "a" * 26, "007-*", "{room:007}", "7\n"]
)
def test_unknown_or_hostile_ids_are_not_found_and_write_nothing(
    r: redis.Redis, bad_id: str
) -> None:
    result = booking_cancel(client=r, booking_id=bad_id, actor_id=STAFF, actor_is_staff=True)
    assert result.outcome == "not_found"
    assert bookings.booking_get(client=r, booking_id=bad_id) is None
    assert product_keys(r) == []


def test_staff_cannot_cancel_a_collected_booking(r: redis.Redis) -> None:
    booking = booked(r, "A")
    assert booking_pickup(client=r, room=7, code=booking.pickup_code(), now=at(3, 9)).ok
    result = booking_cancel(
        client=r, booking_id=booking.id, actor_id=STAFF, actor_is_staff=True, now=at(3, 10)
    )
    assert result.outcome == "collected"


# --- Pickup ---------------------------------------------------------------------------------


def test_pickup_on_the_day_within_the_hours_collects_once(r: redis.Redis) -> None:
    booking = booked(r, hour_start=8, hour_end=12)
    code = booking.pickup_code()
    early = booking_pickup(client=r, room=7, code=code, now=at(3, 7, 59))
    assert early.outcome == "wrong_hour"
    wrong_day = booking_pickup(client=r, room="007", code=code, now=at(4, 9))
    assert wrong_day.outcome == "wrong_day"
    typed = f" {code[:5].lower()} {code[5:]} "
    done = booking_pickup(client=r, room=7, code=typed, now=at(3, 9, 30))
    assert done.ok and done.outcome == "collected"
    assert done.booking is not None and done.booking.status == "collected"
    assert done.booking.collected_dates == (day(3),)
    twice = booking_pickup(client=r, room=7, code=code, now=at(3, 9, 31))
    assert twice.outcome == "already_collected" and "already" in str(twice.message)
    kinds = [e.kind for e in audit.audit_entries(client=r)]
    assert kinds.count("pickup") == 1


def test_the_grace_period_follows_the_last_hour(r: redis.Redis, settings: object) -> None:
    settings.STRONGROOM_PICKUP_GRACE_MINUTES = 15  # type: ignore[attr-defined]
    booking = booked(r, hour_start=8, hour_end=12)
    code = booking.pickup_code()
    assert booking_pickup(client=r, room=7, code=code, now=at(3, 12, 15)).outcome == "wrong_hour"
    assert booking_pickup(client=r, room=7, code=code, now=at(3, 12, 14)).ok


def test_the_grace_after_hours_ending_at_midnight_runs_into_the_next_day(
    r: redis.Redis, settings: object
) -> None:
    settings.STRONGROOM_PICKUP_GRACE_MINUTES = 15  # type: ignore[attr-defined]
    booking = booked(r, hour_start=22, hour_end=24)
    code = booking.pickup_code()
    assert booking_pickup(client=r, room=7, code=code, now=at(4, 0, 15)).outcome == "wrong_day"
    done = booking_pickup(client=r, room=7, code=code, now=at(4, 0, 14))
    assert done.ok and done.booking is not None
    assert done.booking.collected_dates == (day(3),) and done.booking.status == "collected"
    assert booking_pickup(client=r, room=7, code=code, now=at(4, 0, 14)).outcome == (
        "already_collected"
    )


def test_last_night_s_grace_wins_over_tonight_s_hours_not_begun(
    r: redis.Redis, settings: object
) -> None:
    settings.STRONGROOM_PICKUP_GRACE_MINUTES = 15  # type: ignore[attr-defined]
    booking = booked(r, dates=(3, 4), hour_start=23, hour_end=24)
    code = booking.pickup_code()
    first = booking_pickup(client=r, room=7, code=code, now=at(4, 0, 5))
    assert first.ok and first.booking is not None
    assert first.booking.collected_dates == (day(3),) and first.booking.status == "confirmed"
    # Still in last night's grace: that day is the one asked for, and it is collected.
    assert booking_pickup(client=r, room=7, code=code, now=at(4, 0, 6)).outcome == (
        "already_collected"
    )
    assert booking_pickup(client=r, room=7, code=code, now=at(4, 0, 15)).outcome == "wrong_hour"
    second = booking_pickup(client=r, room=7, code=code, now=at(4, 23, 30))
    assert second.ok and second.booking is not None and second.booking.status == "collected"


def test_class_a_is_collected_any_time_of_its_day(r: redis.Redis) -> None:
    booking = booked(r, "A")
    assert booking_pickup(client=r, room=7, code=booking.pickup_code(), now=at(3, 23, 59)).ok


def test_a_multi_day_booking_is_collected_once_per_day(r: redis.Redis) -> None:
    booking = booked(r, "A", dates=(3, 4))
    code = booking.pickup_code()
    first = booking_pickup(client=r, room=7, code=code, now=at(3, 9))
    assert first.ok and first.booking is not None and first.booking.status == "confirmed"
    assert booking_pickup(client=r, room=7, code=code, now=at(3, 10)).outcome == (
        "already_collected"
    )
    second = booking_pickup(client=r, room=7, code=code, now=at(4, 9))
    assert second.ok and second.booking is not None and second.booking.status == "collected"


def test_a_cancelled_booking_cannot_be_collected(r: redis.Redis) -> None:
    booking = booked(r, "A")
    booking_cancel(client=r, booking_id=booking.id, actor_id=BUYER, actor_is_staff=False, now=NOW)
    result = booking_pickup(client=r, room=7, code=booking.pickup_code(), now=at(3, 9))
    assert result.outcome == "cancelled" and not result.ok


def test_a_code_opens_only_its_own_room(r: redis.Redis) -> None:
    booking = booked(r, "A")
    assert booking_pickup(client=r, room=8, code=booking.pickup_code(), now=at(3, 9)).outcome == (
        "wrong_code"
    )


def test_ten_wrong_codes_lock_the_guessing_client_for_ten_minutes_not_the_room(
    r: redis.Redis,
) -> None:
    booking = booked(r, "A")
    other_room = claim(r, request("A", room=8)).booking
    assert other_room is not None
    moment = at(3, 9)
    for attempt in range(9):
        result = booking_pickup(
            client=r, room=7, code="ABCDEFGHJK", now=moment, client_id="203.0.113.9"
        )
        assert result.outcome == "wrong_code", attempt
    tenth = booking_pickup(
        client=r, room=7, code="not even a code", now=moment, client_id="203.0.113.9"
    )
    assert tenth.outcome == "locked" and tenth.locked_until == moment + dt.timedelta(minutes=10)
    # The guesser waits, even with a right code; in other rooms it may still try.
    locked = booking_pickup(
        client=r, room=7, code=booking.pickup_code(), now=moment, client_id="203.0.113.9"
    )
    assert locked.outcome == "locked" and "locked" in str(locked.message)
    assert booking_pickup(
        client=r, room=8, code=other_room.pickup_code(), now=moment, client_id="203.0.113.9"
    ).ok
    # The owner, from another address, is not refused.
    owner = booking_pickup(
        client=r, room=7, code=booking.pickup_code(), now=moment, client_id="198.51.100.4"
    )
    assert owner.ok, owner
    assert not r.exists(RoomKeys(7).pickup_lock("198.51.100.4"))


def test_wrong_codes_spread_over_rooms_lock_the_client_in_every_room(
    r: redis.Redis, settings: Any
) -> None:
    settings.STRONGROOM_PICKUP_CLIENT_MAX_FAILURES = 12
    mine = booked(r, "A")
    moment = at(3, 9)
    answers = [
        booking_pickup(client=r, room=room, code="ABCDEFGHJK", now=moment, client_id="g").outcome
        for room in range(20, 32)  # 12 rooms, one wrong code each: no room's limit is reached
    ]
    assert answers == ["wrong_code"] * 11 + ["locked"]
    refused = booking_pickup(client=r, room=7, code=mine.pickup_code(), now=moment, client_id="g")
    assert refused.outcome == "locked"
    assert booking_pickup(client=r, room=7, code=mine.pickup_code(), now=moment, client_id="o").ok


def test_failures_older_than_the_window_do_not_count(r: redis.Redis) -> None:
    booked(r, "A")
    for minute in range(9):
        booking_pickup(client=r, room=7, code="ABCDEFGHJK", now=at(3, 9, minute))
    result = booking_pickup(client=r, room=7, code="ABCDEFGHJK", now=at(3, 9, 20))
    assert result.outcome == "wrong_code"


def test_the_lock_key_expires_by_itself(r: redis.Redis) -> None:
    for _ in range(10):
        booking_pickup(client=r, room=7, code="ABCDEFGHJK", now=at(3, 9), client_id="x")
    ttl = r.pttl(RoomKeys(7).pickup_lock("x"))
    assert 590_000 < ttl <= 600_000


@pytest.mark.parametrize(
    "room", ["", "0", "301", "7:1", "{7}", "7\n", "７", "🦄", "x" * 100, None, True]
)
def test_pickup_refuses_bad_rooms_without_writing(r: redis.Redis, room: object) -> None:
    result = booking_pickup(client=r, room=room, code="ABCDEFGHJK", now=at(3, 9))  # type: ignore[arg-type]
    # A room typed that does not exist is named as such; a missing one asks for it.
    typed = isinstance(room, str) and room.strip()
    assert result.outcome == ("no_room" if typed else "invalid")
    assert product_keys(r) == []


def test_a_retried_claim_then_pickup_uses_the_first_code(r: redis.Redis) -> None:
    req = request("A")
    booking_id = booking_new_id(room=7)
    first = booking_claim(client=r, owner_id=BUYER, request=req, booking_id=booking_id, now=NOW)
    booking_claim(client=r, owner_id=BUYER, request=req, booking_id=booking_id, now=NOW)
    assert first.booking is not None
    assert booking_pickup(client=r, room=7, code=first.booking.pickup_code(), now=at(3, 9)).ok
