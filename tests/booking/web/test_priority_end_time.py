"""The end of a priority hold (the waiting list's offer when a slot frees) is one time, the
same for its holder and for everyone else: a hold ends on a whole minute, so the holder (told
the minute it ends in) and the others (told the minute it is over by) read the same minute."""

from __future__ import annotations

import datetime as dt
import email
import html
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.engine.cancel import booking_cancel
from booking.engine.priority import priority_grant
from booking.engine.waits import Wait, wait_join, waits_of
from strongroom.outbox_delivery import outbox_send
from tests.booking_support import NOW, booked_id, day
from tests.conftest import Someone, person_make
from tests.mail_support import mail_part, mail_to_files, with_address

# The slot frees at 10:00:30: its priority hold (an hour) ends on the next whole minute, 11:01.
FREED_AT = NOW + dt.timedelta(seconds=30)


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(FREED_AT, tick=False):
        yield


@pytest.fixture
def later(r: redis.Redis) -> Someone:
    """The second in line."""
    return person_make(r, "later_waiter")


def _cancelled_with_waiters(r: redis.Redis, owner: Someone, *waiters: Someone) -> None:
    """`waiters`, in that order, wait for room 61's day 5, which `owner` booked and cancels."""
    booking_id = booked_id(r, owner, cls="A", room=61, dates=[day(5)])
    for waiter in waiters:
        assert wait_join(client=r, owner_id=str(waiter.id), wait=Wait(61, "A", day(5))) == "ok"
    assert booking_cancel(
        client=r, booking_id=booking_id, actor_id=str(owner.id), actor_is_staff=False
    ).ok


def _freed_for(r: redis.Redis, owner: Someone, first: Someone, later: Someone) -> str:
    """`first`, then `later`, wait for room 61's day 5, which `owner` booked and now cancels:
    `first`'s priority hold (granted, as the mail sender grants it)."""
    _cancelled_with_waiters(r, owner, first, later)
    (status,) = waits_of(client=r, owner_id=str(first.id))
    assert status.mine and status.hold_id and status.priority_until is not None
    assert status.priority_until.second == 0  # the end is on a whole minute
    assert priority_grant(client=r, person_id=first.id, hold_id=status.hold_id) == "granted"
    return status.hold_id


def _page(web: Client, url: str, language: str = "en") -> str:
    return html.unescape(web.get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode())


def test_the_holder_and_everyone_else_read_one_end(
    r: redis.Redis,
    client_for: Callable[[Someone], Client],
    buyer: Someone,
    second_buyer: Someone,
    later: Someone,
) -> None:
    _freed_for(r, buyer, second_buyer, later)
    holder, other = client_for(second_buyer), client_for(later)
    mine = _page(holder, "/book/mine/")
    assert "A slot you waited for in room 061 is held for you until 11:01 (Shanghai time)." in mine
    assert "It is free and held for you until 11:01 (Shanghai time)." in mine
    theirs = _page(other, "/book/mine/")
    assert "someone who asked earlier has priority until 11:01 (Shanghai time)" in theirs
    booking_page = _page(other, f"/book/?cls=A&room=61&date={day(5).isoformat()}")
    assert "held by another buyer until 11:01 Shanghai time" in booking_page
    for page in (mine, theirs, booking_page):
        assert "11:00" not in page


def test_one_end_in_chinese_too(
    r: redis.Redis,
    client_for: Callable[[Someone], Client],
    buyer: Someone,
    second_buyer: Someone,
    later: Someone,
) -> None:
    _freed_for(r, buyer, second_buyer, later)
    mine = _page(client_for(second_buyer), "/book/mine/", "zh-hans")
    theirs = _page(client_for(later), "/book/mine/", "zh-hans")
    booking_page = _page(
        client_for(later), f"/book/?cls=A&room=61&date={day(5).isoformat()}", "zh-hans"
    )
    for page in (mine, theirs, booking_page):
        assert "11:01" in page and "11:00" not in page


def test_the_mails_of_a_freed_slot_say_the_same_end(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, settings: Any, tmp_path: Path
) -> None:
    """The first in line's mail (the hold is theirs) and the next one's (priority until)."""
    sent = mail_to_files(settings, tmp_path)
    later = person_make(r, "later_waiter")
    with_address(r, second_buyer, "bo@example.test")
    with_address(r, later, "later@example.test", language="zh-hans")
    _cancelled_with_waiters(r, buyer, second_buyer, later)
    outbox_send(client=r)
    bodies = {}
    for path in sent.glob("*.eml"):
        message = email.message_from_bytes(path.read_bytes())
        bodies[str(message["To"])] = mail_part(message, "text/plain").decode()
    assert "it is held for you until 11:01 (Shanghai time)" in bodies["bo@example.test"]
    assert "11:01" in bodies["later@example.test"]
    assert "11:00" not in bodies["later@example.test"]
