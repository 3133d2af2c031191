"""A hold never runs on past the midnight its first day begins at: from then on that day can no
longer be booked (one day ahead), so a hold shown "until 00:45" offered a "Book" that was
refused. Its end is capped at that midnight when it is made, ordinary holds and the waiting
list's priority holds alike, and every page and mail says "until 00:00"."""

from __future__ import annotations

import datetime as dt
import email
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.parser import slot_request_parse
from booking.domain.rules import booking_new_id, day_starts_within, hold_new_id
from booking.engine.bookings import hold_get
from booking.engine.cancel import booking_cancel
from booking.engine.claims import booking_claim
from booking.engine.holds import HoldResult, booking_hold
from booking.engine.moves import booking_move
from booking.engine.owners import owner_forget
from booking.engine.waits import Wait, wait_join, waits_of
from booking.engine.waits_upkeep import waits_sweep
from strongroom.clock import to_ms
from strongroom.outbox_delivery import outbox_send
from tests.booking_support import NOW, SHANGHAI, day
from tests.conftest import Someone
from tests.mail_support import mail_part, mail_to_files, with_address
from tests.pages_support import hidden

MIDNIGHT = dt.datetime(2026, 12, 5, 0, 0, tzinfo=SHANGHAI)  # day 5 begins: no longer bookable
EVENING = MIDNIGHT - dt.timedelta(minutes=15)  # 23:45 on day 4


def _booked_then_waited(r: redis.Redis, owner: Someone, waiter: Someone) -> str:
    """`owner` books room 096's day 5 (class A) ten days ahead, `waiter` waits for it; the
    booking's id."""
    with time_machine.travel(NOW, tick=False):
        made = booking_claim(
            client=r, owner_id=str(owner.id),
            request=slot_request_parse(cls="A", room=96, dates=[day(5)]),
            booking_id=booking_new_id(room=96),
        )  # fmt: skip
        assert made.ok and made.booking is not None
        assert wait_join(client=r, owner_id=str(waiter.id), wait=Wait(96, "A", day(5))) == "ok"
    return made.booking.id


def _text(response: Any) -> str:
    return str(response.content.decode())


def test_a_priority_hold_freed_at_2345_is_held_until_midnight_and_gone_after(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
    settings: Any,
    tmp_path: Path,
) -> None:
    sent = mail_to_files(settings, tmp_path)
    with_address(r, second_buyer, "bo@example.test")
    booking_id = _booked_then_waited(r, buyer, second_buyer)
    with time_machine.travel(EVENING, tick=False):
        assert booking_cancel(
            client=r, booking_id=booking_id, actor_id=str(buyer.id), actor_is_staff=False
        ).ok
        outbox_send(client=r)  # tells the waiter (and grants the hold)
        (told,) = waits_of(client=r, owner_id=str(second_buyer.id))
        assert told.mine and told.priority_until == MIDNIGHT
        held = hold_get(client=r, hold_id=told.hold_id)
        assert held is not None and held.expires_at == MIDNIGHT
        browser = client_for(second_buyer)
        home = _text(browser.get("/"))
        assert "A slot you waited for in room 096 is held for you until 00:00" in home
        assert "00:45" not in home
        confirm = _text(browser.get(f"/book/confirm/{told.hold_id}/"))
        assert "Held for you until" in confirm and ">00:00<" in confirm
        assert "It is free and held for you until 00:00" in _text(browser.get("/book/mine/"))
    (mail,) = [email.message_from_bytes(p.read_bytes()) for p in sent.glob("*.eml")]
    body = mail_part(mail, "text/plain").decode()
    assert "it is held for you until 00:00 (Shanghai time)" in body and "00:45" not in body
    with time_machine.travel(MIDNIGHT + dt.timedelta(minutes=10), tick=False):
        home = _text(browser.get("/"))
        assert 'id="priority-banner"' not in home and "Book it" not in home
        assert hold_get(client=r, hold_id=told.hold_id) is None


def test_a_hold_placed_at_2355_ends_at_midnight_on_the_confirm_page(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    browser = client_for(buyer)
    form = {"cls": "A", "room": "96", "date": day(5).isoformat()}
    with time_machine.travel(MIDNIGHT - dt.timedelta(minutes=5), tick=False):
        response = browser.post("/book/hold/", form)
        assert response.status_code == 302, _text(response)
        confirm = _text(browser.get(response["Location"]))
        assert ">00:00<" in confirm and ">00:05" not in confirm
        held = hold_get(client=r, hold_id=hidden(confirm, "hold_id"))
        assert held is not None and held.expires_at == MIDNIGHT
    with time_machine.travel(MIDNIGHT + dt.timedelta(seconds=1), tick=False):
        assert hold_get(client=r, hold_id=held.id) is None


def _class_a_hold(
    r: redis.Redis, someone: Someone, room: int, dates: list[dt.date], at: dt.datetime
) -> HoldResult:
    return booking_hold(
        client=r, owner_id=str(someone.id),
        request=slot_request_parse(cls="A", room=room, dates=dates, now=at),
        hold_id=hold_new_id(room=room), now=at,
    )  # fmt: skip


def test_a_hold_for_a_later_day_keeps_its_whole_time(r: redis.Redis, buyer: Someone) -> None:
    at = MIDNIGHT - dt.timedelta(minutes=5)
    placed = _class_a_hold(r, buyer, 96, [day(6)], at)
    assert placed.ok and placed.hold is not None
    assert placed.hold.expires_at == MIDNIGHT + dt.timedelta(minutes=5)
    # A hold of days 5 and 6 begins on day 5: it ends when day 5 does.
    both = _class_a_hold(r, buyer, 97, [day(5), day(6)], at)
    assert both.ok and both.hold is not None and both.hold.expires_at == MIDNIGHT


def test_a_priority_hold_the_sweep_places_before_midnight_ends_at_midnight(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    """A hold placed at 23:35 runs out at 23:45; the sweep offers its slot to the waiter: until
    00:00, not 00:47."""
    placed_at = MIDNIGHT - dt.timedelta(minutes=25)
    held = _class_a_hold(r, buyer, 96, [day(5)], placed_at)
    assert held.ok and held.hold is not None
    assert held.hold.expires_at == placed_at + dt.timedelta(minutes=10)
    assert wait_join(
        client=r, owner_id=str(second_buyer.id), wait=Wait(96, "A", day(5)), now=placed_at
    ) == "ok"  # fmt: skip
    swept_at = MIDNIGHT - dt.timedelta(minutes=13)
    assert waits_sweep(client=r, now=swept_at) == 1
    (told,) = waits_of(client=r, owner_id=str(second_buyer.id), now=swept_at)
    assert told.mine and told.priority_until == MIDNIGHT


@pytest.mark.parametrize(
    ("zone", "at", "starts"),
    [
        # Shanghai, 23:45: only tomorrow's midnight is within a day.
        ("Asia/Shanghai", dt.datetime(2026, 12, 4, 15, 45, tzinfo=dt.UTC),
         [dt.datetime(2026, 12, 4, 16, 0, tzinfo=dt.UTC)]),
        # London's 23-hour day (summer time from 01:00 on 2027-03-28): at 23:30 the day after
        # tomorrow begins 23.5 hours later, within a day's priority hold.
        ("Europe/London", dt.datetime(2027, 3, 27, 23, 30, tzinfo=dt.UTC),
         [dt.datetime(2027, 3, 28, 0, 0, tzinfo=dt.UTC),
          dt.datetime(2027, 3, 28, 23, 0, tzinfo=dt.UTC)]),
    ],
)  # fmt: skip
def test_the_day_starts_a_hold_may_reach_follow_the_zone(
    settings: Any, zone: str, at: dt.datetime, starts: list[dt.datetime]
) -> None:
    settings.TIME_ZONE = zone
    assert day_starts_within(24 * 3600 * 1000, at) == ",".join(str(to_ms(s)) for s in starts)
    assert day_starts_within(10 * 60 * 1000, at - dt.timedelta(hours=1)) == ""


@pytest.mark.parametrize("freed_by", ["move", "move_rooms", "deletion"])
def test_a_priority_hold_freed_by_a_move_or_a_deletion_at_2345_ends_at_midnight(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, freed_by: str
) -> None:
    """The other functions that free a slot and offer it (a move within the room or to
    another, an account deleted) cap the priority hold the same way."""
    booking_id = _booked_then_waited(r, buyer, second_buyer)
    if freed_by == "deletion":
        owner_forget(client=r, owner_id=str(buyer.id), now=EVENING)
    else:
        room = 96 if freed_by == "move" else 97
        moved = booking_move(
            client=r, booking_id=booking_id,
            request=slot_request_parse(cls="A", room=room, dates=[day(6)], now=EVENING),
            actor_id=str(buyer.id), actor_is_staff=False, now=EVENING,
        )  # fmt: skip
        assert moved.ok, moved
    (told,) = waits_of(client=r, owner_id=str(second_buyer.id), now=EVENING)
    assert told.mine and told.priority_until == MIDNIGHT
