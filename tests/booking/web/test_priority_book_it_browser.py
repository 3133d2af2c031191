""" "Book it" on a priority hold in Chromium: the Book button double-clicked in one tab and
pressed again in a second tab of the same browser; one booking, and both tabs show it."""

from __future__ import annotations

import re
from typing import Any

import pytest
import redis

from booking.engine.bookings import bookings_of
from tests.booking.web.test_booking_browser import booking_site, new_page, season
from tests.booking.web.test_priority_book_it import freed
from tests.conftest import Someone, browser_sign_in

pytestmark = pytest.mark.browser
__all__ = ["booking_site", "new_page", "season"]  # fixtures shared with the booking page tests


def test_book_double_clicked_and_pressed_in_a_second_tab_books_once(
    new_page: Any, r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    (hold_id,) = freed(r, buyer, second_buyer, [73]).values()
    page = new_page()
    browser_sign_in(page, second_buyer)
    other_tab = page.context.new_page()
    for tab in (page, other_tab):
        tab.goto(f"/book/confirm/{hold_id}/")
    page.locator("form.book-form button[type=submit]").dblclick()
    page.wait_for_url(re.compile(r"/book/done/"))
    other_tab.locator("form.book-form button[type=submit]").click()
    other_tab.wait_for_url(re.compile(r"/book/done/"))
    assert other_tab.url == page.url
    assert "Someone was faster" not in other_tab.content()
    assert len(bookings_of(client=r, owner_id=str(second_buyer.id))) == 1
