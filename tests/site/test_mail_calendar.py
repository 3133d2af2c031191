"""The calendar files mail carries are iTIP that calendar apps accept: a receipt REQUESTs the
buyer (ORGANIZER and ATTENDEE), and its cancellation CANCELs the same events by UID."""

from __future__ import annotations

from email.message import Message
from pathlib import Path

import pytest
import redis
from icalendar import Calendar

from booking.domain.calendar_files import booking_ics
from booking.engine.cancel import booking_cancel
from strongroom.outbox_delivery import outbox_send
from tests.conftest import Someone
from tests.mail_support import mail_part, mail_to_files, with_address
from tests.site.test_after_mail import book, messages_in


@pytest.fixture
def mail_dir(settings: object, tmp_path: Path) -> Path:
    return mail_to_files(settings, tmp_path / "mail")


def calendar_of(message: Message) -> Calendar:
    return Calendar.from_ical(mail_part(message, "text/calendar"))


def test_the_receipt_invites_the_buyer_and_the_cancellation_cancels_the_same_events(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    with_address(r, buyer, "anna@example.test")
    booking = book(r, buyer, cls="B", hour_start=8, hour_end=10)
    outbox_send(client=r)
    booking_cancel(client=r, booking_id=booking.id, actor_id=str(buyer.id), actor_is_staff=False)
    outbox_send(client=r)
    receipt, cancelled = (calendar_of(m) for m in messages_in(mail_dir))
    assert (receipt["METHOD"], cancelled["METHOD"]) == ("REQUEST", "CANCEL")
    uids = []
    for calendar in (receipt, cancelled):
        (event,) = calendar.walk("VEVENT")
        assert str(event["ATTENDEE"]) == "mailto:anna@example.test"
        assert str(event["ORGANIZER"]).startswith("mailto:")
        uids.append(str(event["UID"]))
    assert uids[0] == uids[1]


def test_a_file_with_a_method_but_no_one_to_invite_is_published(r: redis.Redis, buyer: Someone):
    booking = book(r, buyer)
    calendar = Calendar.from_ical(booking_ics(booking, url="https://x/", method="REQUEST"))
    assert calendar["METHOD"] == "PUBLISH"
    (event,) = calendar.walk("VEVENT")
    assert "ATTENDEE" not in event and "ORGANIZER" not in event
