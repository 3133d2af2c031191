"""The staff dashboard in a real browser (Playwright, Chromium) against the served site."""

from __future__ import annotations

from pathlib import Path

import redis

from booking.selectors import booking_get
from tests.booking_support import claim, request
from tests.conftest import Someone, browser_login
from tests.dashboard_support import World


def test_staff_filter_open_cancel_with_a_reason_and_find_it_in_the_audit_log(
    page: object,
    r: redis.Redis,
    world: World,
    buyer: Someone,
    staff: Someone,
    screenshot_dir: Path,
) -> None:
    target = claim(r, request("B", 42, (20,), hour_start=14, hour_end=16), owner=str(buyer.id))
    assert target.booking is not None
    booking_id = target.booking.id
    browser_login(page, staff)
    page.goto("/staff/")  # type: ignore[attr-defined]
    page.set_viewport_size({"width": 1280, "height": 1000})  # type: ignore[attr-defined]
    assert page.locator("#class-figures").is_visible()  # type: ignore[attr-defined]
    assert page.locator("svg.chart__svg").count() == 3  # type: ignore[attr-defined]
    page.screenshot(path=str(screenshot_dir / "dashboard-overview.png"), full_page=True)  # type: ignore[attr-defined]

    page.click("nav.dash-nav >> text=Bookings")  # type: ignore[attr-defined]
    page.fill("#id_start", "2026-12-19")  # type: ignore[attr-defined]
    page.fill("#id_end", "2026-12-21")  # type: ignore[attr-defined]
    with page.expect_navigation():  # type: ignore[attr-defined]
        page.click("#booking-filter button[type=submit]")  # type: ignore[attr-defined]
    assert "start=2026-12-19" in page.url  # type: ignore[attr-defined]
    rows = page.locator("#bookings-table tbody tr")  # type: ignore[attr-defined]
    assert rows.count() == 1
    with page.expect_navigation():  # type: ignore[attr-defined]
        page.click(f"#bookings-table a:text('{booking_id}')")  # type: ignore[attr-defined]
    page.fill("#id_reason", "Room 042 closed for a repair")  # type: ignore[attr-defined]
    with page.expect_navigation():  # type: ignore[attr-defined]
        page.click("#cancel-form button[type=submit]")  # type: ignore[attr-defined]
    assert "cancelled" in page.locator("#booking-status").inner_text()  # type: ignore[attr-defined]
    assert page.locator(".message--success").count() == 1  # type: ignore[attr-defined]
    booking = booking_get(client=r, booking_id=booking_id)
    assert booking is not None and booking.status == "cancelled"

    page.click("nav.dash-nav >> text=Audit log")  # type: ignore[attr-defined]
    page.select_option("#id_kind", "cancel")  # type: ignore[attr-defined]
    with page.expect_navigation():  # type: ignore[attr-defined]
        page.click("form.filters button[type=submit]")  # type: ignore[attr-defined]
    first = page.locator("table.log tbody tr").first  # type: ignore[attr-defined]
    text = first.inner_text()
    assert booking_id in text and "Room 042 closed for a repair" in text
    assert staff.username in text


def test_the_dashboard_fits_a_phone_and_its_tables_scroll(
    page: object, r: redis.Redis, staff: Someone, screenshot_dir: Path
) -> None:
    claim(r, request("C", 7, (3,), hour_start=9, hour_end=11, boxes="1,2,3"))
    page.set_viewport_size({"width": 390, "height": 844})  # type: ignore[attr-defined]
    browser_login(page, staff)
    for url in ("/staff/", "/staff/occupancy/?cls=C&floor=1&date=2026-12-03", "/staff/keyspace/"):
        page.goto(url)  # type: ignore[attr-defined]
        overflow = page.evaluate(  # type: ignore[attr-defined]
            "document.documentElement.scrollWidth - window.innerWidth"
        )
        assert overflow <= 0, (url, overflow)
    page.screenshot(path=str(screenshot_dir / "dashboard-keyspace-phone.png"))  # type: ignore[attr-defined]
