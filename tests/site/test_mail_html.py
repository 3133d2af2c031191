"""Mails people expect: each one a plain-text part and an HTML alternative in the reader's
language (valid HTML, no image), the receipt's calendar file METHOD:REQUEST and the
cancellation's METHOD:CANCEL under the same UID; screenshots of the receipt, en and zh."""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis
from django.test import Client

from accounts import emails, services
from booking.engine.cancel import booking_cancel
from strongroom.outbox_delivery import outbox_send
from tests.conftest import Someone
from tests.mail_support import with_address
from tests.site.test_after_mail import book
from tests.site.test_html_valid import validate

if TYPE_CHECKING:
    from playwright.sync_api import Browser


@pytest.fixture
def mail_dir(settings: object, tmp_path: Path) -> Path:
    directory = tmp_path / "mail"
    settings.STRONGROOM_MAIL_DIR = directory  # type: ignore[attr-defined]
    settings.EMAIL_BACKEND = "strongroom.mail.FilePerMessageBackend"  # type: ignore[attr-defined]
    return directory


def parsed(directory: Path) -> list[EmailMessage]:
    found = []
    for path in sorted(directory.glob("*.eml")):
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        found.append(message)
    return found


def parts(message: EmailMessage) -> tuple[str, str]:
    text, html = message.get_body(("plain",)), message.get_body(("html",))
    assert text is not None and html is not None, message.get_content_type()
    return str(text.get_content()), str(html.get_content())


def calendar_of(message: EmailMessage) -> tuple[str, str]:
    """The attached calendar's Content-Type method and its text."""
    (part,) = [p for p in message.walk() if p.get_content_type() == "text/calendar"]
    return str(part.get_param("method")), str(part.get_content())


def every_mail(r: redis.Redis, buyer: Someone, language: str) -> None:
    """A receipt, a cancellation, a reset link, "your password was changed", then "a new
    address was asked for" (to the confirmed address) with the new one's confirmation link, and
    once it is opened, "your email address was changed" (to the old address), as sent."""
    with_address(r, buyer, "anna@example.test", language=language)
    booking = book(r, buyer)
    outbox_send(client=r)
    booking_cancel(client=r, booking_id=booking.id, actor_id=str(buyer.id), actor_is_staff=False)
    outbox_send(client=r)
    Client().post("/accounts/password/forgot/", {"login": buyer.username})
    outbox_send(client=r)
    services.password_set(client=r, person_id=buyer.id, password="a-fresh-Secret-42")
    outbox_send(client=r)
    emails.email_set(client=r, person_id=buyer.id, email="anna.new@example.test")
    outbox_send(client=r)
    token = emails.verify_token_make(person_id=buyer.id, email="anna.new@example.test")
    assert emails.email_verify(client=r, token=token) is not None
    outbox_send(client=r)


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_every_mail_has_a_text_and_a_valid_html_part_in_the_readers_language(
    r: redis.Redis, buyer: Someone, mail_dir: Path, tmp_path: Path, language: str
) -> None:
    every_mail(r, buyer, language)
    messages = parsed(mail_dir)
    assert len(messages) == 7
    pages = {}
    for number, message in enumerate(messages):
        text, html = parts(message)
        assert f'<html lang="{language}">' in html and "<img" not in html
        # The same words in both parts (the first line of the text is in the HTML).
        first = text.strip().splitlines()[0]
        assert first.replace("<", "&lt;") in html
        pages[f"{language} mail {number} ({message['Subject']})"] = html
        if language == "zh-hans":
            assert "您" in html or "你" in html
    assert validate(pages, tmp_path) == []


def test_the_receipt_asks_calendars_to_add_and_the_cancellation_to_remove_the_same_events(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    every_mail(r, buyer, "en")
    receipt, cancellation = parsed(mail_dir)[:2]
    method, receipt_ics = calendar_of(receipt)
    assert method == "REQUEST" and "METHOD:REQUEST" in receipt_ics
    assert "SEQUENCE:0" in receipt_ics and "ORGANIZER:mailto:" in receipt_ics
    method, cancel_ics = calendar_of(cancellation)
    assert method == "CANCEL" and "METHOD:CANCEL" in cancel_ics
    assert "STATUS:CANCELLED" in cancel_ics and "SEQUENCE:1" in cancel_ics
    uid = next(line for line in receipt_ics.splitlines() if line.startswith("UID:"))
    assert uid in cancel_ics.splitlines()


@pytest.mark.browser
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_screenshot_of_the_receipt(
    r: redis.Redis,
    buyer: Someone,
    mail_dir: Path,
    browser: Browser,
    screenshot_dir: Path,
    language: str,
) -> None:
    with_address(r, buyer, "anna@example.test", language=language)
    book(r, buyer)
    outbox_send(client=r)
    (receipt,) = parsed(mail_dir)
    _text, html = parts(receipt)
    page = browser.new_page(viewport={"width": 700, "height": 900})
    try:
        page.route("**/*", lambda route: route.abort())  # images off: nothing is fetched
        page.set_content(html)
        assert page.locator("h1").inner_text().strip() == str(receipt["Subject"])
        page.screenshot(path=str(screenshot_dir / f"mail-receipt-{language}.png"), full_page=True)
    finally:
        page.close()


def test_a_password_change_and_an_address_change_are_told_where_the_owner_reads(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    every_mail(r, buyer, "en")
    told = {str(m["Subject"]): str(m["To"]) for m in parsed(mail_dir)}
    assert told["Your Strongroom password was changed"] == "anna@example.test"
    # The confirmed address hears of the change asked for, and of the change once the new one
    # (which gets its confirmation link) is confirmed.
    asked = "A new email address was asked for your Strongroom account"
    assert told[asked] == "anna@example.test"
    assert told["Your Strongroom email address was changed"] == "anna@example.test"
    assert told["Confirm your email address for Strongroom"] == "anna.new@example.test"


def test_a_booking_made_before_the_address_was_confirmed_gets_its_receipt_once_it_is(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    booking = book(r, buyer)
    assert outbox_send(client=r).dropped == 1  # no confirmed address yet: nothing sent
    cancelled = book(r, buyer, room=8)
    booking_cancel(client=r, booking_id=cancelled.id, actor_id=str(buyer.id), actor_is_staff=False)
    outbox_send(client=r)
    assert not list(mail_dir.glob("*.eml"))
    with_address(r, buyer, "anna@example.test")  # confirms the address
    outbox_send(client=r)
    (receipt,) = parsed(mail_dir)  # the cancelled booking's receipt stays unsent
    assert booking.reference in str(receipt["Subject"]) and receipt["To"] == "anna@example.test"
    outbox_send(client=r)
    assert len(parsed(mail_dir)) == 1  # once
