"""Signing up from the booking flow, in Debian's Chromium against the served site."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

pytestmark = pytest.mark.browser

CHOICE = "/book/?cls=B&room=7&start=9&end=11&date=2026-12-05"


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_sign_up_from_the_booking_flow_returns_to_the_filled_in_booking_page(
    browser: Any, live_site: str, javascript: bool
) -> None:
    context = browser.new_context(base_url=live_site, java_script_enabled=javascript)
    page = context.new_page()
    try:
        page.goto(CHOICE)
        with page.expect_navigation():
            page.get_by_role("link", name="Log in to book").click()
        assert urlsplit(page.url).path == "/accounts/login/"
        with page.expect_navigation():
            page.get_by_role("link", name="Create an account").click()
        assert urlsplit(page.url).path == "/accounts/signup/"
        name = "newcomer_js" if javascript else "newcomer_nojs"
        page.fill("input[name=username]", name)
        page.fill("input[name=email]", f"{name}@example.test")
        page.fill("input[name=password1]", "Treasure-hunt-2026!")
        page.fill("input[name=password2]", "Treasure-hunt-2026!")
        with page.expect_navigation():
            page.click("form[action='/accounts/signup/'] button[type=submit]")
        back = urlsplit(page.url)
        assert back.path == "/book/"
        query = parse_qs(back.query)
        assert query["cls"] == ["B"] and query["room"] == ["7"]
        assert query["start"] == ["9"] and query["end"] == ["11"]
        assert query["date"] == ["2026-12-05"]
        summary = page.locator("#summary")
        assert "007" in summary.inner_text()
        assert page.get_by_role("button", name="Hold and review").is_visible()
        assert page.get_by_role("link", name=name).get_attribute("href") == "/accounts/me/"
    finally:
        context.close()
