"""Every link in a mail's text is a link in its HTML part, in English and in Chinese (where a
full-width colon stands right before it, with no space)."""

from __future__ import annotations

from email.message import Message
from pathlib import Path

import pytest
import redis

from accounts.mail import html_body
from booking.engine.cancel import booking_cancel
from strongroom.outbox_delivery import outbox_send
from tests.conftest import Someone
from tests.mail_support import mail_part, mail_to_files, with_address
from tests.site.test_after_mail import body_of, book, messages_in


@pytest.fixture
def mail_dir(settings: object, tmp_path: Path) -> Path:
    return mail_to_files(settings, tmp_path / "mail")


def html_of(message: Message) -> str:
    return mail_part(message, "text/html").decode("utf-8")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_receipt_and_the_cancellation_link_the_booking_in_html(
    r: redis.Redis, buyer: Someone, mail_dir: Path, language: str, settings: object
) -> None:
    with_address(r, buyer, "anna@example.test", language=language)
    booking = book(r, buyer)
    outbox_send(client=r)  # the receipt (one of a booking cancelled since is dropped)
    booking_cancel(client=r, booking_id=booking.id, actor_id=str(buyer.id), actor_is_staff=False)
    outbox_send(client=r)
    receipt, cancelled = messages_in(mail_dir)
    site = settings.STRONGROOM_SITE_URL  # type: ignore[attr-defined]
    done, mine = f"{site}/book/done/{booking.id}/", f"{site}/book/mine/"
    for message, link in ((receipt, done), (cancelled, mine)):
        assert link in body_of(message)
        assert f'<a href="{link}">{link}</a>' in html_of(message), language


def test_a_link_ends_before_punctuation_and_text_around_it_is_escaped() -> None:
    html = html_body(subject="s", text="详情：http://a.test/x/。See <http://b.test/y/>, & more.")
    assert '详情：<a href="http://a.test/x/">http://a.test/x/</a>。' in html
    assert '&lt;<a href="http://b.test/y/">http://b.test/y/</a>&gt;, &amp; more.' in html
