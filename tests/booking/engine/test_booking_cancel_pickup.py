"""Cancel and pickup rules: who may cancel when; pickup on the day, in the hours, once."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import redis

from booking.domain.codes import CODE_ALPHABET
from booking.domain.keys import RoomKeys
from booking.domain.records import Booking
from booking.domain.rules import booking_new_id
from booking.engine import audit, bookings, stats
from booking.engine.cancel import booking_cancel
from booking.engine.claims import booking_claim
from booking.engine.pickup import booking_pickup, miss_delay
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
    # Still in last night's grace: that day is the one asked for, and it is collected; the
    # answer names tonight's as the one to come back for.
    again = booking_pickup(client=r, room=7, code=code, now=at(4, 0, 6))
    assert again.outcome == "already_collected" and again.come_on == day(4)
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


def guess(n: int) -> str:
    """The n-th well-formed wrong code (a code's own letters and digits: one that cannot be a
    code is refused as such, not counted as a guess)."""
    digits = ""
    for _ in range(6):
        n, digit = divmod(n, len(CODE_ALPHABET))
        digits += CODE_ALPHABET[digit]
    return "ABCD" + digits


def test_a_thousand_wrong_codes_then_the_owners_right_code_from_the_same_address_opens(
    r: redis.Redis, settings: Any
) -> None:
    booking = booked(r, "A")
    moment = at(3, 9)  # one fixed instant: no delay has run out when the owner types
    ceiling = settings.STRONGROOM_PICKUP_DELAY_CEILING_SECONDS
    delays = []
    for n in range(1000):
        wrong = booking_pickup(client=r, room=7, code=guess(n), now=moment, client_id="203.0.113.9")
        assert wrong.outcome == "wrong_code" and not wrong.ok, n
        delays.append(wrong.retry_after)
    owner = booking_pickup(
        client=r, room=7, code=booking.pickup_code(), now=moment, client_id="203.0.113.9"
    )
    assert owner.ok and owner.outcome == "collected", owner
    # Every wrong code asked for a pause, growing, never past the ceiling.
    assert delays[:3] == [0, 0, 0] and delays[3:8] == [1, 2, 4, 8, 16]
    assert delays == sorted(delays) and max(delays) == ceiling and delays[-1] == ceiling
    # What the guesser keeps in the store is bounded however long it goes on.
    assert r.zcard(RoomKeys(7).pickup_failures("203.0.113.9")) <= 1024


def test_the_right_code_opens_after_wrong_codes_in_every_room_from_its_address(
    r: redis.Redis,
) -> None:
    mine = booked(r, "A")
    moment = at(3, 9)
    delays = [
        booking_pickup(
            client=r, room=room, code="ABCDEFGHJK", now=moment, client_id="g"
        ).retry_after
        for room in range(20, 32)  # 12 rooms, one wrong code each: no room's free tries used up
    ]
    # The building-wide count slows a client spreading its guesses over rooms too.
    assert delays == [0] * 10 + [1, 2]
    assert booking_pickup(client=r, room=7, code=mine.pickup_code(), now=moment, client_id="g").ok


def test_the_delay_doubles_and_stops_at_the_ceiling() -> None:
    delays = [miss_delay(n, free=3, ceiling=60) for n in range(12)]
    assert delays == [0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 60, 60]
    assert miss_delay(10**9, free=3, ceiling=60) == 60
    assert miss_delay(5, free=0, ceiling=3) == 3


def test_wrong_codes_show_in_the_audit_at_each_doubling_not_each_code(r: redis.Redis) -> None:
    other = booked(r, "A")  # its claim entry must survive the guessing
    for n in range(100):
        booking_pickup(client=r, room=7, code=guess(n), now=at(3, 9), client_id="203.0.113.9")
    failed = audit.audit_entries(client=r, kind="pickup_failed")
    assert [e.detail for e in failed] == [
        f"{n} wrong codes from 203.0.113.9 within 10 min" for n in (64, 32, 16, 8, 4)
    ]
    assert [e.kind for e in audit.booking_audit(client=r, booking_id=other.id)] == ["claim"]


def test_failures_older_than_the_window_do_not_count(r: redis.Redis) -> None:
    booked(r, "A")
    for minute in range(9):
        booking_pickup(client=r, room=7, code="ABCDEFGHJK", now=at(3, 9, minute))
    result = booking_pickup(client=r, room=7, code="ABCDEFGHJK", now=at(3, 9, 20))
    assert result.outcome == "wrong_code" and result.misses == 1 and result.retry_after == 0


def test_the_failure_count_expires_by_itself(r: redis.Redis) -> None:
    for _ in range(10):
        booking_pickup(client=r, room=7, code="ABCDEFGHJK", now=at(3, 9), client_id="x")
    ttl = r.pttl(RoomKeys(7).pickup_failures("x"))
    assert 590_000 < ttl <= 600_000


def test_the_wrong_day_names_the_day_to_come_back(r: redis.Redis) -> None:
    booking = booked(r, "B", dates=(3, 5))
    code = booking.pickup_code()
    early = booking_pickup(client=r, room=7, code=code, now=at(2, 9))
    assert early.outcome == "wrong_day" and early.come_on == day(3)
    assert booking_pickup(client=r, room=7, code=code, now=at(3, 9)).ok
    between = booking_pickup(client=r, room=7, code=code, now=at(4, 9))
    assert between.outcome == "wrong_day" and between.come_on == day(5)
    early_hour = booking_pickup(client=r, room=7, code=code, now=at(5, 7))
    assert early_hour.outcome == "wrong_hour" and early_hour.come_on == day(5)
    # After the hours and their grace, today is not a day to come back on.
    late = booking_pickup(client=r, room=7, code=code, now=at(5, 13))
    assert late.outcome == "wrong_hour" and late.come_on is None
    assert booking_pickup(client=r, room=7, code=code, now=at(6, 9)).come_on is None


@pytest.mark.parametrize(
    "room", ["", "0", "301", "7:1", "{7}", "7\n", "３０１", "🦄", "x" * 100, None, True]
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


@pytest.mark.parametrize("typed", ["😀" * 10, "ABCDE", "ABCDE-23456-7", "ABCDE-1O0IL"])
def test_what_cannot_be_a_code_is_refused_as_such_and_not_counted(
    r: redis.Redis, typed: str
) -> None:
    """Ten emoji (any wrong length or character) counted as a wrong guess and slowed the
    kiosk; it is refused with a word on a code's form, and nothing is written."""
    claim(r, request("A", room=7, dates=(3,)))
    before = snapshot(r)
    for _ in range(6):  # past the free misses: still no delay
        result = booking_pickup(client=r, room=7, code=typed, now=at(3, 9), client_id="k")
        assert (result.outcome, result.retry_after, result.ok) == ("malformed", 0, False)
    assert "10 letters and digits" in str(result.message)
    assert snapshot(r) == before
