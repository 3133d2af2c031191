"""The reminder the day before a pickup (fixed clock): once per booking, also across sender
passes and restarts (the marks are in the store), to confirmed addresses, in the buyer's
language, with the code, the room, the hours and the calendar file."""

from __future__ import annotations

import datetime as dt
import email
import email.header
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine

from booking.domain.codes import code_display
from booking.engine.cancel import booking_cancel
from booking.engine.reminders import reminders_queue
from strongroom import keyspace as ks
from strongroom import outbox
from strongroom.outbox_sender import sender_pass as one_pass
from tests.booking_support import SHANGHAI, claim, request
from tests.conftest import Someone
from tests.mail_support import mail_to_files, with_address

THE_DAY_BEFORE = dt.datetime(2026, 12, 2, 10, 0, tzinfo=SHANGHAI)


@pytest.fixture
def mail_dir(settings: Any, tmp_path: Path) -> Path:
    return mail_to_files(settings, tmp_path)


def sender_pass(*, client: redis.Redis) -> None:
    """A full pass of the sender whose turn it is to run the hooks (they run once a period:
    each call here stands for a pass of a later period, or of a restarted sender)."""
    client.delete(ks.MAIL_SWEEP.key())
    one_pass(client=client)


def reminders(directory: Path) -> list[email.message.Message]:
    found = [email.message_from_bytes(p.read_bytes()) for p in directory.glob("*.eml")]

    def subject(m: email.message.Message) -> str:
        return str(email.header.make_header(email.header.decode_header(m["Subject"])))

    return [m for m in found if subject(m).startswith(("Tomorrow", "明天"))]


def test_each_booking_is_reminded_once_the_day_before(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, mail_dir: Path,
    client_for: Callable[[Someone], Any],
) -> None:  # fmt: skip
    with_address(r, buyer, "anna@example.test", "zh-hans")
    mine = claim(r, request("B", dates=(3, 4), hour_start=8, hour_end=10), owner=str(buyer.id))
    later = claim(r, request("A", room=9, dates=(5,)), owner=str(buyer.id))
    gone = claim(r, request("A", room=10, dates=(3,)), owner=str(buyer.id))
    unconfirmed = claim(r, request("A", room=11, dates=(3,)), owner=str(second_buyer.id))
    assert mine.booking and later.booking and gone.booking and unconfirmed.booking
    booking_cancel(
        client=r, booking_id=gone.booking.id, actor_id=str(buyer.id), actor_is_staff=False,
        now=THE_DAY_BEFORE - dt.timedelta(days=1),
    )  # fmt: skip
    with time_machine.travel(THE_DAY_BEFORE - dt.timedelta(days=1), tick=False):
        sender_pass(client=r)  # two days ahead: nothing yet
    for p in mail_dir.glob("*.eml"):
        p.unlink()  # the receipts and the cancellation
    with time_machine.travel(THE_DAY_BEFORE, tick=False):
        sender_pass(client=r)
        sender_pass(client=r)
        # A restart of the sender: a new process knows nothing the store does not.
        outbox.sender_woken()
        sender_pass(client=r)
        assert reminders_queue(client=r) == 0
    with time_machine.travel(THE_DAY_BEFORE + dt.timedelta(hours=13), tick=False):
        sender_pass(client=r)  # later the same day (23:00): still once
    sent = reminders(mail_dir)
    assert len(sent) == 1
    (message,) = sent
    assert message["To"] == "anna@example.test"
    body = next(p for p in message.walk() if p.get_content_type() == "text/plain")
    text = body.get_payload(decode=True).decode()  # type: ignore[union-attr]
    assert "明天" in text and code_display(mine.booking.pickup_code()) in text
    assert "007" in text and "08:00" in text and "2026年12月3日" in text
    assert any(p.get_content_type() == "text/calendar" for p in message.walk())


def test_nothing_is_queued_for_a_day_without_first_days(r: redis.Redis) -> None:
    claim(r, request("A", dates=(5,)))
    assert reminders_queue(client=r, now=THE_DAY_BEFORE) == 0
    assert reminders_queue(client=r, now=THE_DAY_BEFORE + dt.timedelta(days=2)) == 1
    assert reminders_queue(client=r, now=THE_DAY_BEFORE + dt.timedelta(days=2)) == 0
