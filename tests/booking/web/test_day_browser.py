"""Running the day in Debian's Chromium against the served site: a buyer moving a booking,
the pickup desk with its hand-over, and staff acting for a buyer (moving, the receipt again,
booking for them), four ways each: a desktop and a phone, each in English and in Chinese and
each with JavaScript and without it. The site's season is around today (see
test_booking_browser.py)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
import redis

from booking.engine.bookings import booking_get, bookings_of
from tests.booking.web import test_booking_browser as served
from tests.booking.web.test_booking_browser import CODE, DAY, TODAY, book
from tests.conftest import browser_sign_in

# The served site with a season around today, and its pages (fixtures of that module).
booking_site = served.booking_site
season = served.season
new_page = served.new_page

pytestmark = pytest.mark.browser

WAYS = [
    pytest.param("en-US", True, 1280, id="desktop-en-js"),
    pytest.param("zh-CN", False, 390, id="phone-zh-nojs"),
    pytest.param("zh-CN", False, 1280, id="desktop-zh-nojs"),
    pytest.param("en-US", True, 390, id="phone-en-js"),
]
LATER = DAY + dt.timedelta(days=1)


def fits_the_screen(page: Any, width: int) -> bool:
    """Nothing wider than the viewport (a phone need not scroll sideways)."""
    return bool(page.evaluate(f"document.documentElement.scrollWidth <= {width} + 1"))


@pytest.mark.parametrize(("locale", "javascript", "width"), WAYS)
def test_a_buyer_moves_a_booking(
    new_page: Any, buyer: Any, r: redis.Redis, locale: str, javascript: bool, width: int
) -> None:
    booking = book(r, buyer, "B", DAY, hour_start=8, hour_end=10)
    page = new_page(locale=locale, javascript=javascript, width=width)
    browser_sign_in(page, buyer)
    page.goto("/book/mine/")
    page.locator(f"a[href='/book/mine/{booking.id}/move/']").click()
    page.wait_for_url(re.compile(r"/move/$"))
    assert fits_the_screen(page, width)
    page.fill("#move-date-1", LATER.isoformat())
    page.select_option("#move-start", "14")
    page.select_option("#move-end", "16")
    page.locator("form.move-form button[type=submit]").click()
    page.wait_for_url(re.compile(rf"/book/done/{booking.id}/$"))
    moved = booking_get(client=r, booking_id=booking.id)
    assert moved is not None and moved.dates == (LATER,) and moved.hours == (14, 16)
    shown = page.locator("#pickup-code").inner_text().strip()
    assert CODE.fullmatch(shown) and shown.replace("-", "") == moved.pickup_code()
    word = "预订已改期" if locale.startswith("zh") else "The booking is moved"
    assert word in page.locator(".messages").inner_text()


@pytest.mark.parametrize(("locale", "javascript", "width"), WAYS)
def test_the_pickup_desk_hands_a_booking_over(
    new_page: Any, buyer: Any, staff: Any, r: redis.Redis,
    locale: str, javascript: bool, width: int,
) -> None:  # fmt: skip
    yesterday = dt.datetime.now(tz=dt.UTC) - dt.timedelta(days=1)
    due = book(r, buyer, "B", TODAY, now=yesterday, hour_start=0, hour_end=24)
    page = new_page(locale=locale, javascript=javascript, width=width)
    browser_sign_in(page, staff)
    page.goto("/staff/desk/?from=1&to=20")
    row = page.locator(f"#desk-{due.id}")
    assert due.reference in row.inner_text() and buyer.username in row.inner_text()
    assert fits_the_screen(page, width)
    assert "1" in page.locator("#desk-counts").inner_text()
    row.locator("input[name=note]").fill("ID checked")
    row.locator("button[type=submit]").click()
    page.wait_for_url(re.compile(r"/staff/desk/\?"))
    done = booking_get(client=r, booking_id=due.id)
    assert done is not None and done.status == "collected"
    counts = page.locator("#desk-counts").inner_text()
    assert re.search(r"1\s*(collected|已取)", counts), counts
    assert page.locator(f"#desk-{due.id} form").count() == 0


@pytest.mark.parametrize(("locale", "javascript", "width"), WAYS)
def test_staff_act_for_a_buyer(
    new_page: Any, buyer: Any, staff: Any, r: redis.Redis,
    locale: str, javascript: bool, width: int,
) -> None:  # fmt: skip
    booking = book(r, buyer, "A", DAY)
    page = new_page(locale=locale, javascript=javascript, width=width)
    browser_sign_in(page, staff)
    # Move the buyer's booking to another room.
    page.goto(f"/staff/bookings/{booking.id}/")
    page.locator(f"a[href='/staff/bookings/{booking.id}/move/']").click()
    page.fill("#move-room", "12")
    page.locator("form.move-form button[type=submit]").click()
    page.wait_for_url(re.compile(r"/staff/bookings/012-"))
    moved = booking_get(client=r, booking_id=booking.id)
    assert moved is not None and moved.room == 12 and moved.reference == booking.reference
    # Send the receipt again.
    page.locator("#acting form button[type=submit]").click()
    page.wait_for_url(re.compile(r"/staff/bookings/012-"))
    assert page.locator(".messages").count() == 1
    # Book for the buyer from the person page.
    page.goto(f"/staff/people/{buyer.id}/")
    assert fits_the_screen(page, width)
    page.select_option("#book-cls", "A")
    page.fill("#book-room", "15")
    page.fill("#book-date", LATER.isoformat())
    page.locator("#book-for button[type=submit]").click()
    page.wait_for_url(re.compile(r"/staff/bookings/015-"))
    mine = {(b.room, b.dates) for b in bookings_of(client=r, owner_id=str(buyer.id))}
    assert (15, (LATER,)) in mine and (12, (DAY,)) in mine
