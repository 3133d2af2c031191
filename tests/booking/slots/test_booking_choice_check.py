"""Honest pickers: the chosen slots that are sold or held (until when), the nearest free
alternatives, and the calendar's words, from one read of the store."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
import redis
import time_machine

from booking.domain.rules import calendar_day, hold_new_id
from booking.engine.holds import booking_hold
from booking.slots.choice_check import REACH, Wanted, choice_check
from booking.slots.panel_state import day_words
from booking.slots.room_read import rooms_read
from strongroom.store import round_trips
from tests.booking_support import NOW, claim, day, request
from tests.store_support import rooms_trips


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def hold(client: redis.Redis, owner: str = "202", **kwargs: object) -> dt.datetime:
    req = request(**kwargs)  # type: ignore[arg-type]
    made = booking_hold(
        client=client, owner_id=owner, request=req, hold_id=hold_new_id(room=req.room), now=NOW
    )
    assert made.ok and made.hold is not None
    return made.hold.expires_at


def test_a_free_choice_is_one_read_and_blocks_nothing(r: redis.Redis) -> None:
    near_158 = rooms_trips(r, range(158 - REACH, 158 + REACH + 1))  # 1 pipeline, per primary
    with round_trips() as trips:
        found = choice_check(client=r, wanted=Wanted("B", 158, (day(2),), (6, 10), ()), now=NOW)
    assert trips.count == near_158 and found.free


def test_the_issues_example_names_the_taken_hours_and_offers_what_is_near(
    r: redis.Redis,
) -> None:
    claim(r, request("B", room=158, dates=(2,), hour_start=8, hour_end=10))
    near_158 = rooms_trips(r, range(158 - REACH, 158 + REACH + 1))  # 1 pipeline, per primary
    with round_trips() as trips:
        found = choice_check(client=r, wanted=Wanted("B", 158, (day(2),), (6, 10), ()), now=NOW)
    assert trips.count == near_158
    assert [(b.date, b.hours, b.held_until) for b in found.blocked] == [(day(2), (8, 10), None)]
    assert [a.room for a in found.other_rooms] == [157, 159, 156]
    assert [a.hours for a in found.other_hours] == [(4, 8), (10, 14), (3, 7)]


def test_a_held_slot_is_named_with_the_end_of_the_hold(r: redis.Redis) -> None:
    until = hold(r, cls="C", room=5, dates=(3,), hour_start=9, hour_end=11, boxes=[7])
    found = choice_check(client=r, wanted=Wanted("C", 5, (day(3),), (10, 12), (7,)), now=NOW)
    assert [(b.hours, b.box, b.held_until) for b in found.blocked] == [((10, 11), 7, until)]
    # the same hours with another box in this room comes first, then other hours
    assert found.other_hours[0].boxes == (6,) and found.other_hours[0].hours == (10, 12)
    assert found.other_rooms[0].room == 4 and found.other_rooms[0].boxes == (7,)


def test_the_buyers_own_hold_does_not_block_them(r: redis.Redis) -> None:
    hold(r, owner="202", cls="A", room=9, dates=(3,))
    wanted = Wanted("A", 9, (day(3),), None, ())
    assert choice_check(client=r, wanted=wanted, owner_id="202", now=NOW).free
    assert not choice_check(client=r, wanted=wanted, owner_id="303", now=NOW).free


def test_calendar_words_tell_what_is_left(r: redis.Redis) -> None:
    claim(r, request("B", room=158, dates=(2,), hour_start=8, hour_end=10))
    claim(r, request("B", room=158, dates=(4,), hour_start=0, hour_end=24))
    until = hold(r, cls="B", room=158, dates=(5,), hour_start=6, hour_end=10)
    read = rooms_read(
        client=r, cls="B", rooms=[158], dates=[day(n) for n in (2, 3, 4, 5)], now=NOW
    )[0]

    def words(n: int, hours: tuple[int, int] | None) -> tuple[str, dt.datetime | None]:
        found = day_words(read, "B", calendar_day(day(n)), hours, ())
        return found.state, found.held_until

    assert words(2, (6, 10)) == ("sold_for", None)
    assert words(2, None) == ("partly", None)
    assert words(2, (10, 12)) == ("partly", None)
    assert words(3, (6, 10)) == ("available", None)
    assert words(4, None) == ("sold_out", None)
    assert words(5, (6, 10)) == ("held", until)
