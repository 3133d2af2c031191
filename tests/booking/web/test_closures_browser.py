"""Closures in Debian's Chromium against the served site, desktop and phone, English and
Chinese: staff close a room for a day, see the booking inside before confirming and cancel it
in the same action; the calendar and the building map read "closed" with the reason; the
buyer whose booking was cancelled reads the reason in My bookings."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import redis

from booking.domain.parser import slot_request_parse
from booking.domain.rules import booking_new_id
from booking.engine.claims import booking_claim
from tests.booking.web.test_booking_browser import DAY, booking_site, new_page, season
from tests.conftest import browser_sign_in

pytestmark = pytest.mark.browser
__all__ = ["booking_site", "new_page", "season"]  # fixtures shared with the booking page tests

REASON = "safe under repair"
CLOSED = {"en-US": f"Closed: {REASON}", "zh-CN": f"已关闭：{REASON}"}
# The calendar's cell says only "closed" (a phone's cell is too narrow for a reason); the
# reason is told under the calendar, with the day.
CELL = {"en-US": "Closed", "zh-CN": "不开放"}
UNDER = {"en-US": f"Closed on {DAY:%B} {DAY.day}: {REASON}",
         "zh-CN": f"{DAY.month}月{DAY.day}日不开放：{REASON}"}  # fmt: skip


@pytest.mark.parametrize(
    ("locale", "width"), [("en-US", 1280), ("zh-CN", 390)], ids=["desktop-en", "phone-zh"]
)
def test_staff_close_a_room_and_buyers_see_it_closed_with_the_reason(
    new_page: Any,
    buyer: Any,
    staff: Any,
    r: redis.Redis,
    locale: str,
    width: int,
    screenshot_dir: Path,
) -> None:
    request = slot_request_parse(cls="A", room=5, dates=[DAY])
    made = booking_claim(
        client=r, owner_id=str(buyer.id), request=request, booking_id=booking_new_id(room=5)
    )
    assert made.ok and made.booking is not None
    desk = new_page(locale=locale, javascript=True, width=width)
    browser_sign_in(desk, staff)
    desk.goto("/staff/closures/")
    desk.fill("#id_rooms", "5")
    desk.fill("#id_first", DAY.isoformat())
    desk.fill("#id_last", DAY.isoformat())
    desk.fill("#id_reason", REASON)
    desk.click("#closure-form button[type=submit]")
    listed = desk.locator("#inside-list").inner_text()
    assert made.booking.reference in listed
    desk.screenshot(path=str(screenshot_dir / f"closure-check-{locale}-{width}.png"))
    desk.click("#closure-confirm button[type=submit]")
    desk.wait_for_url(re.compile(r"/staff/closures/$"))
    assert REASON in desk.locator("#closures-table").inner_text()

    shop = new_page(locale=locale, javascript=True, width=width)
    browser_sign_in(shop, buyer)
    shop.goto(f"/book/?cls=A&room=5&month={DAY:%Y-%m}")
    cell = shop.locator(f"#day-{DAY.isoformat()}")
    assert cell.locator("small").inner_text() == CELL[locale] and cell.is_disabled()
    assert shop.locator("#calendar-closures").inner_text() == UNDER[locale]
    shop.screenshot(path=str(screenshot_dir / f"closure-calendar-{locale}-{width}.png"))
    shop.goto(f"/book/find/?cls=A&date={DAY.isoformat()}")
    assert CLOSED[locale] in shop.locator("#map-room-005").inner_text()
    shop.goto("/book/mine/")
    assert REASON in shop.locator("body").inner_text()
