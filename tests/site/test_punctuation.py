"""Labels and lists are punctuated in the reader's language: "Status: " and "1, 2" in English,
the full-width colon and the enumeration comma in Chinese, on pages and in mail."""

from __future__ import annotations

import html
from typing import Any

import redis
from django.template.loader import render_to_string
from django.utils import translation

from booking.engine.bookings import booking_get
from tests.booking_support import claim, request
from tests.conftest import Someone


def test_the_booking_page_and_the_receipt_facts_are_punctuated_per_language(
    r: redis.Redis, client_for: Any, buyer: Someone
) -> None:
    made = claim(r, request("A", room=12, dates=(5, 7)), owner=str(buyer.id))
    assert made.booking is not None
    web = client_for(buyer)
    page = f"/book/done/{made.booking.id}/"
    chinese = html.unescape(web.get(page, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode())
    assert "状态\uff1a" in chinese and "状态: " not in chinese
    english = html.unescape(web.get(page, HTTP_ACCEPT_LANGUAGE="en").content.decode())
    assert "Status: " in english
    booking = booking_get(client=r, booking_id=made.booking.id)
    with translation.override("zh-hans"):
        facts = render_to_string("mail/_booking_facts.txt", {"booking": booking})
    assert "取件码" not in facts  # the facts, not the code
    assert "\uff1a" in facts and ": " not in facts and "\u3001" in facts  # two days: one list
    with translation.override("en"):
        facts = render_to_string("mail/_booking_facts.txt", {"booking": booking})
    assert "Days: " in facts and ", " in facts


def test_two_sentences_of_a_hint_have_no_space_between_them_in_chinese() -> None:
    from django.test import Client

    page = Client().get("/book/?cls=B&room=5", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "最后一个小时。选择日期" in html.unescape(page)
    english = Client().get("/book/?cls=B&room=5", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "hour below. Pick a day" in html.unescape(english)


def test_box_lists_read_as_lists_in_chinese_in_mail_and_on_pages(
    r: redis.Redis, client_for: Any, buyer: Someone
) -> None:
    made = claim(r, request("C", room=14, dates=(5,), hour_start=8, hour_end=9, boxes=[3, 4]),
                 owner=str(buyer.id))  # fmt: skip
    assert made.booking is not None
    with translation.override("zh-hans"):
        facts = render_to_string("mail/_booking_facts.txt", {"booking": made.booking})
    assert "\uff1a3\u30014" in facts and ": " not in facts
    page = client_for(buyer).get(f"/book/done/{made.booking.id}/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "3\u30014" in html.unescape(page.content.decode())


def test_dates_and_zones_are_punctuated_per_language_on_the_account_page_and_the_map(
    r: redis.Redis, client_for: Any, buyer: Someone
) -> None:
    """Two days read "2026年12月5日、2026年12月7日", and the zone follows the hours with no
    space before its full-width bracket; English keeps ", " and " (")."""
    claim(r, request("B", room=12, dates=(5, 7), hour_start=8, hour_end=9), owner=str(buyer.id))
    web = client_for(buyer)
    account = html.unescape(
        web.get("/accounts/me/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    )
    assert "2026年12月5日\u30012026年12月7日" in account and "5日, " not in account
    mine = html.unescape(web.get("/book/mine/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode())
    assert '09:00<span class="zone">（' in mine and ' <span class="zone">（' not in mine
    english = html.unescape(web.get("/book/mine/", HTTP_ACCEPT_LANGUAGE="en").content.decode())
    assert '09:00 <span class="zone">(' in english
    find = "/book/find/?cls=B&date=2026-12-05&days=2&start=8&end=9"
    chinese_map = html.unescape(web.get(find, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode())
    assert "2026年12月5日\u30012026年12月6日" in chinese_map
