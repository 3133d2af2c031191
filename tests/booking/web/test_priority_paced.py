"""A buyer at the hourly booking limit is not given the waiting list's priority hold: they
could not book it (429), and everyone else found it held ("Someone was faster") until it ran
out. It is given back when it would be granted, as a hold over the per-buyer cap is: the slot
is everyone's at once, and every waiter, the skipped one included, is told it is free."""

from __future__ import annotations

import email
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.parser import slot_request_parse
from booking.domain.rules import booking_new_id, hold_new_id
from booking.engine.bookings import hold_get
from booking.engine.cancel import booking_cancel
from booking.engine.claims import booking_claim
from booking.engine.holds import booking_hold
from booking.engine.priority import priority_grant
from booking.engine.waits import Wait, wait_join, waits_of
from strongroom.outbox_delivery import outbox_send
from tests.booking_support import NOW, day
from tests.conftest import Someone, person_make
from tests.mail_support import mail_part, mail_to_files, with_address

LIMIT = 2


@pytest.fixture(autouse=True)
def frozen(settings: Any) -> Iterator[None]:
    settings.STRONGROOM_BOOKINGS_PER_HOUR = LIMIT
    with time_machine.travel(NOW, tick=False):
        yield


def _at_the_limit(r: redis.Redis, someone: Someone) -> None:
    for room in range(10, 10 + LIMIT):
        assert booking_claim(
            client=r, owner_id=str(someone.id),
            request=slot_request_parse(cls="A", room=room, dates=[day(5)]),
            booking_id=booking_new_id(room=room), paced=True,
        ).ok  # fmt: skip


def _freed(r: redis.Redis, owner: Someone, waiters: list[Someone]) -> str:
    """`waiters` wait, in order, for room 061's day 5, which `owner` booked and cancels: the
    first one's priority hold (pending)."""
    made = booking_claim(
        client=r, owner_id=str(owner.id),
        request=slot_request_parse(cls="A", room=61, dates=[day(5)]),
        booking_id=booking_new_id(room=61),
    )  # fmt: skip
    assert made.ok and made.booking is not None
    for waiter in waiters:
        assert wait_join(client=r, owner_id=str(waiter.id), wait=Wait(61, "A", day(5))) == "ok"
    assert booking_cancel(
        client=r, booking_id=made.booking.id, actor_id=str(owner.id), actor_is_staff=False
    ).ok
    (first,) = waits_of(client=r, owner_id=str(waiters[0].id))
    assert first.mine and first.hold_id
    return first.hold_id


def _another_may_hold(r: redis.Redis, someone: Someone) -> None:
    held = booking_hold(
        client=r, owner_id=str(someone.id),
        request=slot_request_parse(cls="A", room=61, dates=[day(5)]),
        hold_id=hold_new_id(room=61), paced=True,
    )  # fmt: skip
    assert held.ok, held


def test_the_mail_sender_gives_a_paced_buyers_priority_hold_to_everyone(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, settings: Any, tmp_path: Path
) -> None:
    sent = mail_to_files(settings, tmp_path)
    later = person_make(r, "later_waiter")
    with_address(r, second_buyer, "bo@example.test")
    with_address(r, later, "later@example.test")
    _at_the_limit(r, second_buyer)
    hold_id = _freed(r, buyer, [second_buyer, later])
    outbox_send(client=r)
    assert hold_get(client=r, hold_id=hold_id) is None
    bodies = {}
    for path in sent.glob("*.eml"):
        message = email.message_from_bytes(path.read_bytes())
        if str(message["Subject"]).startswith("Free again"):  # not the receipts
            bodies[str(message["To"])] = mail_part(message, "text/plain").decode()
    for address in ("bo@example.test", "later@example.test"):
        assert "A slot you were waiting for is free again:" in bodies[address]
        assert "It is open to everyone now:" in bodies[address]
        assert "held for you" not in bodies[address]
        assert "has priority until" not in bodies[address]
    (told,) = waits_of(client=r, owner_id=str(second_buyer.id))
    assert not told.mine and told.priority_until is None
    _another_may_hold(r, later)


@pytest.mark.parametrize(
    ("language", "line"),
    [
        ("en", "You have made as many bookings in the last hour as one account may: the slot "
               "you waited for is not held for you, and is open to everyone now."),
        ("zh-hans", "您在过去一小时内的预订次数已达一个账户的上限：您候补的时段不再为您暂留，"
                    "现已向所有人开放。"),
    ],
)  # fmt: skip
def test_book_it_at_the_limit_says_why_and_the_slot_is_everyones(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
    language: str,
    line: str,
) -> None:
    _at_the_limit(r, second_buyer)
    hold_id = _freed(r, buyer, [second_buyer])
    browser = client_for(second_buyer)
    page = browser.get(f"/book/confirm/{hold_id}/", follow=True, HTTP_ACCEPT_LANGUAGE=language)
    assert page.status_code == 200 and page.redirect_chain[0][0].startswith("/book/")
    assert line in page.content.decode()
    assert hold_get(client=r, hold_id=hold_id) is None
    assert 'id="priority-banner"' not in browser.get("/").content.decode()
    _another_may_hold(r, person_make(r, "third_party"))


def test_below_the_limit_the_priority_hold_is_granted(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    """The control: one booking fewer, and the same hold is theirs."""
    assert booking_claim(
        client=r, owner_id=str(second_buyer.id),
        request=slot_request_parse(cls="A", room=10, dates=[day(5)]),
        booking_id=booking_new_id(room=10), paced=True,
    ).ok  # fmt: skip
    hold_id = _freed(r, buyer, [second_buyer])
    assert priority_grant(client=r, person_id=second_buyer.id, hold_id=hold_id) == "granted"
    held = hold_get(client=r, hold_id=hold_id)
    assert held is not None and held.owner_id == str(second_buyer.id)
