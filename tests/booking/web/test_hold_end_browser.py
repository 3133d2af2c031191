"""The confirm page when its hold runs out while it is open, in Debian's Chromium: the line
"Held for you until 03:34" went on showing above "The hold has ended", contradicting it."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.conf import settings
from playwright.sync_api import expect

from booking.domain.parser import slot_request_parse
from booking.domain.rules import hold_new_id
from booking.engine.holds import booking_hold
from tests.booking.web.test_booking_browser import DAY, booking_site, new_page, season
from tests.conftest import browser_sign_in

pytestmark = pytest.mark.browser
__all__ = ["booking_site", "new_page", "season"]  # fixtures shared with the booking page tests


def test_when_the_hold_runs_out_the_held_until_line_gives_way_to_the_status(
    new_page: Any, buyer: Any, r: redis.Redis
) -> None:
    hold_id = hold_new_id(room=21)
    request = slot_request_parse(cls="A", room=21, dates=[DAY])
    made = booking_hold(client=r, owner_id=str(buyer.id), request=request, hold_id=hold_id)
    assert made.ok
    page = new_page()
    browser_sign_in(page, buyer)
    page.clock.install()
    page.goto(f"/book/confirm/{hold_id}/")
    timer, status = page.locator(".hold-timer"), page.locator("[data-countdown-status]")
    page.wait_for_function(
        "document.querySelector('[data-countdown-clock]').textContent !== '--:--'"
    )
    assert timer.is_visible() and "Held for you until" in timer.inner_text()
    assert status.inner_text() == ""
    page.clock.run_for((settings.STRONGROOM_HOLD_SECONDS + 61) * 1000)
    expect(timer).to_be_hidden()  # (polled from here: the site's CSP refuses string scripts)
    assert status.inner_text() == "The hold has ended: booking still works if the slots are free."
