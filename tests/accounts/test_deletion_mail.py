"""Deleting an account tells its confirmed address: each booking cancelled gets its
cancellation mail (the calendar event CANCELLED), and the person a short notice, in their
language, once, through a real SMTP server."""

from __future__ import annotations

import email
import email.header
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

import pytest
import redis
from django.test import Client

from strongroom.outbox import outbox_pending
from strongroom.outbox_delivery import outbox_send
from tests.booking_support import day
from tests.conftest import Someone
from tests.mail_support import mail_to_smtp, smtp_serving, with_address
from tests.site.test_after_mail import body_of, book


@dataclass
class Inbox:
    accepted: list[Message] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.accepted.append(email.message_from_bytes(envelope.content))
        return "250 OK"


@pytest.fixture
def smtp(settings: Any) -> Iterator[Inbox]:
    inbox = Inbox()
    with smtp_serving(inbox) as port:
        mail_to_smtp(settings, port)
        yield inbox


def subject(message: Message) -> str:
    return str(email.header.make_header(email.header.decode_header(message["Subject"])))


def calendar_of(message: Message) -> bytes:
    part = next(p for p in message.walk() if p.get_content_type() == "text/calendar")
    payload = part.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload


@pytest.mark.parametrize(("language", "cancelled", "deleted"), [
    ("en", "Cancelled", "account is deleted"), ("zh-hans", "已取消", "账户已删除"),
])  # fmt: skip
def test_deleting_an_account_mails_each_cancelled_booking_and_a_notice_once(
    r: redis.Redis,
    buyer: Someone,
    client_for: Callable[[Someone], Client],
    smtp: Inbox,
    language: str,
    cancelled: str,
    deleted: str,
) -> None:
    with_address(r, buyer, "anna@example.test", language=language)
    bookings = [book(r, buyer, room=7), book(r, buyer, room=9)]
    outbox_send(client=r)  # the receipts
    smtp.accepted.clear()
    browser = client_for(buyer)
    answer = browser.post("/accounts/me/delete/", {"password": buyer.password})
    assert answer.status_code == 302
    again = browser.post("/accounts/me/delete/", {"password": buyer.password})  # a double click
    assert again.status_code in (302, 403)
    while outbox_pending(client=r):
        assert outbox_send(client=r).failed == 0
    assert outbox_send(client=r).handled == 0
    assert all(m["To"] == "anna@example.test" for m in smtp.accepted)
    notices = [m for m in smtp.accepted if deleted in subject(m) or deleted in body_of(m)]
    assert len(notices) == 1, [subject(m) for m in smtp.accepted]
    assert len(smtp.accepted) == 3, [subject(m) for m in smtp.accepted]
    for booking in bookings:
        (mail,) = [m for m in smtp.accepted if booking.reference in subject(m)]
        assert subject(mail).startswith(cancelled)
        ics = calendar_of(mail)
        assert b"METHOD:CANCEL" in ics and b"STATUS:CANCELLED" in ics
        assert f"UID:{booking.id}-{day(5).isoformat()}@".encode() in ics


def test_a_person_without_a_confirmed_address_is_mailed_nothing(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client], smtp: Inbox
) -> None:
    book(r, buyer)
    client_for(buyer).post("/accounts/me/delete/", {"password": buyer.password})
    outbox_send(client=r)
    assert smtp.accepted == []
