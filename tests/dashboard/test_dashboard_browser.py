"""The staff dashboard in a real browser (Playwright, Chromium) against the served site."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import redis

from booking.engine.bookings import booking_get
from tests.booking_support import claim, request
from tests.conftest import Someone, browser_sign_in
from tests.dashboard_support import World

if TYPE_CHECKING:
    from playwright.sync_api import Page


def test_staff_filter_open_cancel_with_a_reason_and_find_it_in_the_audit_log(
    page: Page,
    r: redis.Redis,
    world: World,
    buyer: Someone,
    staff: Someone,
    screenshot_dir: Path,
) -> None:
    target = claim(r, request("B", 42, (20,), hour_start=14, hour_end=16), owner=str(buyer.id))
    assert target.booking is not None
    booking_id = target.booking.id
    browser_sign_in(page, staff)
    page.goto("/staff/")
    page.set_viewport_size({"width": 1280, "height": 1000})
    assert page.locator("#class-figures").is_visible()
    assert page.locator("svg.chart__svg").count() == 3
    page.screenshot(path=str(screenshot_dir / "dashboard-overview.png"), full_page=True)

    page.click("nav.dash-nav >> text=Bookings")
    page.fill("#id_start", "2026-12-19")
    page.fill("#id_end", "2026-12-21")
    with page.expect_navigation():
        page.click("#booking-filter button[type=submit]")
    assert "start=2026-12-19" in page.url
    rows = page.locator("#bookings-table tbody tr")
    assert rows.count() == 1
    with page.expect_navigation():
        page.click(f"#bookings-table a[title='{booking_id}']")
    page.fill("#id_reason", "Room 042 closed for a repair")
    with page.expect_navigation():
        page.click("#cancel-form button[type=submit]")
    assert "cancelled" in page.locator("#booking-status").inner_text()
    assert page.locator(".message--success").count() == 1
    booking = booking_get(client=r, booking_id=booking_id)
    assert booking is not None and booking.status == "cancelled"

    page.click("nav.dash-nav >> text=Audit log")
    page.select_option("#id_kind", "cancel")
    with page.expect_navigation():
        page.click("form.filters button[type=submit]")
    first = page.locator("table.log tbody tr").first
    text = first.inner_text()
    # Staff read the booking's reference; its id is the link's title.
    assert target.booking.reference in text and "Room 042 closed for a repair" in text
    assert first.locator(f"[title='{booking_id}']").count() == 1
    assert staff.username in text


def test_the_dashboard_fits_a_phone_and_its_tables_scroll(
    page: Page, r: redis.Redis, staff: Someone, screenshot_dir: Path
) -> None:
    claim(r, request("C", 7, (3,), hour_start=9, hour_end=11, boxes="1,2,3"))
    page.set_viewport_size({"width": 390, "height": 844})
    browser_sign_in(page, staff)
    for url in (
        "/staff/", "/staff/occupancy/?cls=C&floor=1&date=2026-12-03", "/staff/keyspace/",
        "/staff/bookings/", "/staff/catalog/books/", "/staff/closures/",
    ):  # fmt: skip
        page.goto(url)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, (url, overflow)
    page.screenshot(path=str(screenshot_dir / "dashboard-keyspace-phone.png"))


def test_the_occupancy_maps_links_are_tall_enough_to_tap_on_a_phone(
    page: Page, r: redis.Redis, staff: Someone
) -> None:
    claim(r, request("B", 7, (3,), hour_start=9, hour_end=11))
    claim(r, request("A", 7, (3,)))
    page.set_viewport_size({"width": 390, "height": 844})
    browser_sign_in(page, staff)
    for url, links in (
        ("/staff/occupancy/?cls=B&floor=1&date=2026-12-03", "#heat-summary th a"),
        ("/staff/occupancy/?cls=B&floor=1&date=2026-12-03", "#heat-summary td a"),
        ("/staff/occupancy/?cls=B&floor=1&date=2026-12-03", "#heat-rooms td a"),
        ("/staff/occupancy/?cls=A&date=2026-12-03", "#heat-summary td a"),
    ):
        page.goto(url)
        heights = page.locator(links).evaluate_all(
            "links => links.map(a => a.getBoundingClientRect().height)"
        )
        assert heights and min(heights) >= 24, (url, links, min(heights))


def test_on_a_phone_the_staff_menu_is_one_row_and_an_empty_tables_words_stay_in_view(
    page: Page, staff: Someone
) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    browser_sign_in(page, staff)
    page.goto("/staff/mail/")
    links = page.locator("nav.dash-nav li a").evaluate_all(
        "links => links.map(a => a.getBoundingClientRect())"
    )
    # Every page of the dashboard in the menu, all on one row (it scrolls sideways), each link
    # as tall as the header's: the page's title starts in the upper third of the screen.
    assert len(links) == 11
    assert len({round(box["top"]) for box in links}) == 1, links
    assert min(box["height"] for box in links) >= 44
    title = page.locator("main h1").bounding_box()
    assert title is not None and title["y"] < 844 / 3, title
    # "Nothing is waiting" spans a table wider than the screen: its words wrap inside the view.
    empty = page.locator(".table-empty > span").first.bounding_box()
    assert empty is not None and empty["x"] + empty["width"] <= 390, empty


def test_on_a_wide_screen_the_header_lines_up_with_the_staff_pages(
    page: Page, staff: Someone
) -> None:
    """At 1366 px the staff pages (96rem wide, for their tables) ran past the header's centred
    72rem: the menu and the page's left edges did not line up."""
    page.set_viewport_size({"width": 1366, "height": 900})
    browser_sign_in(page, staff)
    page.goto("/staff/bookings/")
    nav, main = (page.locator(f"{s}").first.bounding_box() for s in (".site-nav", "main"))
    assert nav and main and abs(nav["x"] - main["x"]) < 1 and abs(nav["width"] - main["width"]) < 1
