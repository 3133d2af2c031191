"""Booking pages in Debian's Chromium against the real served site (gunicorn, DEBUG=0).

These tests run on the real clock, so the site they drive gets a season around today (the
default test season is a fixed December): a served site of its own with
STRONGROOM_SEASON_START/END set, and the same season in process for preparing data with the
engine. That also lets a booking be for *today* (made by the engine with `now=` yesterday), so
the kiosk can be tried on the live server's own clock without freezing anything.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings
from django.test import override_settings

from booking.domain.parser import slot_request_parse
from booking.domain.rules import booking_new_id, site_today
from booking.engine.bookings import bookings_of
from booking.engine.claims import booking_claim
from tests.axe_support import AXE, axe_violations
from tests.conftest import ROOT, browser_sign_in, serve_site, site_env

pytestmark = pytest.mark.browser

TODAY = site_today()
SEASON = (TODAY - dt.timedelta(days=1), TODAY + dt.timedelta(days=40))
TOMORROW = TODAY + dt.timedelta(days=1)
# A bookable day in the month the calendar opens on (the month of the first bookable day).
DAY = min(TOMORROW + dt.timedelta(days=2), (TOMORROW + dt.timedelta(days=32)).replace(day=1))
DAY = DAY if DAY.month == TOMORROW.month else TOMORROW
CODE = re.compile(r"^[2-9A-Z]{5}-[2-9A-Z]{5}$")


@pytest.fixture(scope="module")
def booking_site(store_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The served site with a season from yesterday to 40 days ahead."""
    env = site_env(
        str(settings.REDIS_URL),
        tmp_path_factory.mktemp("booking-site"),
        STRONGROOM_SEASON_START=SEASON[0].isoformat(),
        STRONGROOM_SEASON_END=SEASON[1].isoformat(),
    )
    process, base = serve_site(env)
    yield base
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture(autouse=True)
def season() -> Iterator[None]:
    with override_settings(STRONGROOM_SEASON_START=SEASON[0], STRONGROOM_SEASON_END=SEASON[1]):
        yield


@pytest.fixture
def new_page(browser: Any, booking_site: str) -> Iterator[Any]:
    """A function: (locale, javascript, width) -> a page in a fresh context on the site."""
    contexts: list[Any] = []

    def make(
        locale: str = "en-US", javascript: bool = True, width: int = 1280, axe: bool = False
    ) -> Any:
        # axe-core is injected as a script tag, which the site's CSP rightly refuses.
        context = browser.new_context(
            bypass_csp=axe,
            base_url=booking_site,
            locale=locale,
            java_script_enabled=javascript,
            viewport={"width": width, "height": 900},
        )
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def book(
    r: redis.Redis,
    owner: Any,
    cls: str,
    date: dt.date,
    now: dt.datetime | None = None,
    **extra: Any,
) -> Any:
    """A booking made by the engine, as another buyer would have made it."""
    request = slot_request_parse(cls=cls, room=7, dates=[date], now=now, **extra)
    result = booking_claim(
        client=r,
        owner_id=str(owner.id),
        request=request,
        booking_id=booking_new_id(room=7),
        now=now,
    )
    assert result.ok, result
    return result.booking


def day_button(page: Any, date: dt.date) -> Any:
    return page.locator(f"button[name=toggle][value='{date.isoformat()}']")


def hour_button(page: Any, hour: int) -> Any:
    return page.locator(f"button[name=hour][value='{hour}']")


def test_buyer_books_class_b_eight_to_twelve_and_sees_the_code(
    new_page: Any, buyer: Any, second_buyer: Any, r: redis.Redis, screenshot_dir: Path
) -> None:
    neighbour = DAY + dt.timedelta(days=1)
    if neighbour.month == DAY.month:  # a sold-out day next to it, for the screenshot
        book(r, second_buyer, "B", neighbour, hour_start=0, hour_end=24)
    page = new_page()
    browser_sign_in(page, buyer)
    page.goto("/book/")
    page.evaluate("window.stillTheSamePage = true")
    page.get_by_label("Class B").check()
    page.locator("#pick-hours").wait_for()
    page.fill("#room-input", "7")
    page.press("#room-input", "Enter")
    page.wait_for_url(re.compile(r"room=7"))
    day_button(page, DAY).click()
    page.wait_for_url(re.compile(rf"date={DAY.isoformat()}"))
    hour_button(page, 8).click()
    page.wait_for_url(re.compile(r"start=8&end=9"))
    hour_button(page, 11).click()
    page.wait_for_url(re.compile(r"start=8&end=12"))
    # htmx swapped the parts: the page itself was never reloaded, and its URL is shareable.
    assert page.evaluate("window.stillTheSamePage") is True
    assert hour_button(page, 10).get_attribute("aria-pressed") == "true"
    assert "08:00–12:00" in page.locator("#summary").inner_text()
    page.screenshot(path=str(screenshot_dir / "booking-page.png"), full_page=True)
    page.locator("#calendar").screenshot(path=str(screenshot_dir / "booking-calendar.png"))
    if os.environ.get("UPDATE_DOCS_SCREENSHOT") == "1":
        # The README's picture; refreshed on request only, so a test run leaves git clean.
        shutil.copyfile(screenshot_dir / "booking-page.png", ROOT / "docs" / "booking.png")

    # This device's clock is a day behind: the countdown still shows the hold's own minutes.
    page.add_init_script("{ const real = Date.now; Date.now = () => real() - 86400000; }")
    page.get_by_role("button", name="Hold and review").click()
    page.wait_for_url(re.compile(r"/book/confirm/"))
    page.wait_for_function(
        "document.querySelector('[data-countdown-clock]').textContent !== '--:--'"
    )
    shown = page.locator("[data-countdown-clock]").inner_text()
    assert re.fullmatch(r"\d\d:\d\d", shown)
    # A hold ends on the whole minute at or after its time: up to a minute more.
    assert 0 < int(shown[:2]) * 60 + int(shown[3:]) <= settings.STRONGROOM_HOLD_SECONDS + 60
    page.get_by_role("button", name="Book", exact=True).click()
    page.wait_for_url(re.compile(r"/book/done/"))
    code = page.locator("#pickup-code").inner_text().strip()
    assert CODE.fullmatch(code)
    [booking] = bookings_of(client=r, owner_id=str(buyer.id))
    assert booking.hours == (8, 12) and booking.dates == (DAY,)
    assert code.replace("-", "") == booking.pickup_code()
    page.screenshot(path=str(screenshot_dir / "booking-done.png"), full_page=True)


def test_second_buyer_sees_taken_hours_disabled_and_a_full_day_sold_out(
    new_page: Any, buyer: Any, second_buyer: Any, r: redis.Redis, screenshot_dir: Path
) -> None:
    book(r, buyer, "B", DAY, hour_start=8, hour_end=12)
    full = DAY + dt.timedelta(days=1) if DAY.day < 28 else DAY - dt.timedelta(days=1)
    if full <= TODAY:
        full = DAY + dt.timedelta(days=1)
    book(r, buyer, "B", full, hour_start=0, hour_end=24)
    page = new_page(width=390)
    browser_sign_in(page, second_buyer)
    page.goto(f"/book/?cls=B&room=7&date={DAY.isoformat()}&month={full.strftime('%Y-%m')}")
    for hour in (8, 9, 10, 11):
        assert hour_button(page, hour).is_disabled()
    assert hour_button(page, 12).is_enabled() and hour_button(page, 7).is_enabled()
    sold = day_button(page, full)
    assert sold.is_disabled() and sold.get_attribute("aria-disabled") == "true"
    assert "Sold out" in sold.inner_text()
    page.screenshot(path=str(screenshot_dir / "booking-phone-390.png"), full_page=True)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways on a phone ({width}px)"
    # With 08:00-12:00 chosen, the first day is sold out for those hours too.
    page.goto(f"/book/?cls=B&room=7&start=8&end=12&month={DAY.strftime('%Y-%m')}")
    assert "Sold out" in day_button(page, DAY).inner_text()


def test_class_c_box_grid_reflects_a_booking(
    new_page: Any, buyer: Any, second_buyer: Any, r: redis.Redis
) -> None:
    book(r, buyer, "C", DAY, hour_start=8, hour_end=12, boxes=[5])
    page = new_page()
    page.goto(f"/book/?cls=C&room=7&date={DAY.isoformat()}&start=9&end=10")
    box = page.locator("button[name=pick_box][value='5']")
    assert box.is_disabled() and box.inner_text() == "5"
    assert page.get_by_role("button", name="5 (taken)", exact=True).count() == 1  # its name
    other = page.locator("button[name=pick_box][value='6']")
    other.click()
    page.wait_for_url(re.compile(r"box=6"))
    assert page.locator("button[name=pick_box][value='6']").get_attribute("aria-pressed") == "true"
    # Box 5 alone: its booked hours are taken in the hour row.
    page.goto(f"/book/?cls=C&room=7&date={DAY.isoformat()}&box=5")
    assert hour_button(page, 8).is_disabled() and hour_button(page, 12).is_enabled()


def test_keyboard_focus_stays_on_the_pressed_control_after_each_swap(new_page: Any) -> None:
    page = new_page()
    page.goto(f"/book/?cls=B&room=7&date={DAY.isoformat()}")
    page.evaluate("window.stillTheSamePage = true")
    focused = "document.activeElement.id"
    page.focus("#hour-cell-8")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"start=8"))
    page.wait_for_function(f"{focused} === 'hour-cell-8'")
    page.focus("#class-C")
    page.keyboard.press("ArrowDown")  # radios: the arrow picks the next class (wraps to A)
    page.wait_for_url(re.compile(r"cls=A"))
    page.wait_for_function(f"{focused} === 'class-A'")
    day_button(page, DAY).focus()
    page.keyboard.press("Enter")  # the chosen day again: it is taken off the choice
    page.wait_for_url(lambda url: "date=" not in url)
    page.wait_for_function(f"{focused} === 'day-{DAY.isoformat()}'")
    assert page.evaluate("window.stillTheSamePage") is True


def test_on_a_phone_a_pressed_box_leaves_the_page_where_it_was(new_page: Any) -> None:
    """The panel is swapped whole after each press: the browser's scroll anchoring followed a
    piece of the old panel to its new place, and a phone jumped from the box grid to "Your
    choice" (about 1,800 px down) on every box pressed."""
    page = new_page(width=390)
    page.goto(f"/book/?cls=C&room=7&date={DAY.isoformat()}&start=9&end=11")
    for cell, pressed in (("#box-cell-5", r"box=5"), ("#box-cell-6", r"box=6")):
        page.locator(cell).scroll_into_view_if_needed()
        before = page.evaluate("window.scrollY")
        assert before > 200, before  # the grid is below the first screen
        page.locator(cell).click()
        page.wait_for_url(re.compile(pressed))
        page.wait_for_function(f"document.activeElement.id === '{cell[1:]}'")
        assert abs(page.evaluate("window.scrollY") - before) < 50, cell


def test_without_javascript_a_pressed_box_opens_the_page_at_the_box_grid(new_page: Any) -> None:
    """The whole page loads again after each press: on a phone it opened at the top, the box
    grid a screen and more below; it opens at the grid pressed in."""
    page = new_page(javascript=False, width=390)
    page.goto(f"/book/?cls=C&room=7&date={DAY.isoformat()}&start=9&end=11")
    page.locator("#box-cell-5").click()
    page.wait_for_url(re.compile(r"box=5.*#pick-boxes$"))
    grid_top = page.evaluate("document.getElementById('pick-boxes').getBoundingClientRect().top")
    assert page.evaluate("window.scrollY") > 200 and abs(grid_top) < 5


def test_booking_works_without_javascript(new_page: Any, buyer: Any, r: redis.Redis) -> None:
    page = new_page(javascript=False)
    browser_sign_in(page, buyer)
    page.goto("/book/")
    page.get_by_label("Class A").check()
    page.fill("#room-input", "7")
    page.get_by_role("button", name="Show availability").click()
    page.wait_for_url(re.compile(r"cls=A&room=7"))
    day_button(page, DAY).click()
    page.wait_for_url(re.compile(rf"date={DAY.isoformat()}"))
    assert day_button(page, DAY).get_attribute("aria-pressed") == "true"
    page.get_by_role("button", name="Hold and review").click()
    page.wait_for_url(re.compile(r"/book/confirm/"))
    # Without JavaScript the hold shows its end time, not a countdown.
    assert re.fullmatch(r"\d\d:\d\d", page.locator(".hold-timer__until").inner_text().strip())
    page.get_by_role("button", name="Book", exact=True).click()
    page.wait_for_url(re.compile(r"/book/done/"))
    assert CODE.fullmatch(page.locator("#pickup-code").inner_text().strip())
    [booking] = bookings_of(client=r, owner_id=str(buyer.id))
    assert booking.cls == "A" and booking.dates == (DAY,)


def test_my_bookings_cancels_and_the_slot_is_free_again(
    new_page: Any, buyer: Any, r: redis.Redis
) -> None:
    booking = book(r, buyer, "B", DAY, hour_start=8, hour_end=12)
    page = new_page()
    browser_sign_in(page, buyer)
    page.goto("/book/mine/")
    row = page.locator("article.booking-row")
    assert booking.room_label in row.inner_text()
    assert booking.pickup_code()[:5] in row.inner_text()
    row.get_by_role("link", name="Cancel").click()
    page.get_by_role("button", name="Yes, cancel the booking").click()
    page.wait_for_url(re.compile(r"/book/mine/$"))
    assert "The booking is cancelled" in page.locator(".messages").inner_text()
    assert "Cancelled" in page.locator("article.booking-row").inner_text()
    page.goto(f"/book/?cls=B&room=7&date={DAY.isoformat()}")
    assert hour_button(page, 8).is_enabled()


def test_pickup_opens_once_and_refuses_the_second_time(
    new_page: Any, buyer: Any, r: redis.Redis
) -> None:
    yesterday = dt.datetime.now(tz=dt.UTC) - dt.timedelta(days=1)
    booking = book(r, buyer, "A", TODAY, now=yesterday)
    page = new_page()
    page.goto("/book/pickup/")
    page.get_by_label("Room number").fill("007")
    page.get_by_label("Pickup code").fill(booking.pickup_code().lower())
    page.get_by_role("button", name="Open the safe").click()
    assert page.locator(".pickup-result__word").inner_text() == "Open"
    page.get_by_label("Room number").fill("7")
    page.get_by_label("Pickup code").fill(booking.pickup_code())
    page.get_by_role("button", name="Open the safe").click()
    assert page.locator(".pickup-result__word").inner_text() == "Not opened"
    assert "already been collected" in page.locator(".pickup-result").inner_text()


def test_chinese_page_shows_que_on_a_sold_out_day(
    new_page: Any, buyer: Any, r: redis.Redis, screenshot_dir: Path
) -> None:
    book(r, buyer, "A", DAY)
    page = new_page(locale="zh-CN")
    page.goto(f"/book/?cls=A&room=7&month={DAY.strftime('%Y-%m')}")
    assert page.locator("html").get_attribute("lang") == "zh-hans"
    assert "缺" in day_button(page, DAY).inner_text()
    assert day_button(page, DAY).is_disabled()
    assert page.locator("table.month thead th").first.inner_text().strip() in (
        "星期一",
        "周一",
        "一",
    )
    page.locator("#calendar").screenshot(path=str(screenshot_dir / "booking-calendar-zh.png"))


def test_booking_pages_pass_the_accessibility_check(
    new_page: Any, buyer: Any, r: redis.Redis
) -> None:
    assert AXE.exists(), "run `npm ci` (make test does) to get axe-core"
    booking = book(r, buyer, "C", DAY, hour_start=8, hour_end=12, boxes=[5])
    page = new_page(axe=True)
    browser_sign_in(page, buyer)
    urls = [
        f"/book/?cls=C&room=7&box=6&start=8&end=12&date={DAY.isoformat()}",
        "/book/?cls=B&room=7",
        "/book/mine/",
        f"/book/done/{booking.id}/",
        "/book/pickup/",
    ]
    for url in urls:
        page.goto(url)
        assert axe_violations(page) == [], url


def test_a_keyboard_steps_the_hour_lists_without_sending_each_step(new_page: Any) -> None:
    """Each arrow step on a closed select is a change, and the form was sent at every one: from
    a start of 09:00 "To" met 01:00 first, was refused ("must end after it starts") and reset,
    so a keyboard never reached 10:00. "To" offers only later hours, and a step made by keys
    is sent when the select is left."""
    page = new_page()
    page.goto(f"/book/?cls=C&room=12&box=5&start=9&date={DAY.isoformat()}")
    sent: list[str] = []
    # The pickers' own requests (not the panel's refresh every second, which says seen=).
    page.on(
        "request",
        lambda req: sent.append(req.url) if "/parts/" in req.url and "seen=" not in req.url else 0,
    )
    offered = page.eval_on_selector_all("#hour-end option", "os => os.map(o => o.value)")
    assert offered == ["", *(str(h) for h in range(10, 25))]
    page.focus("#hour-end")
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    assert page.input_value("#hour-end") == "12"
    page.wait_for_timeout(300)
    assert sent == [] and "end=" not in page.url
    page.keyboard.press("Tab")  # leaving the list sends the choice once
    after = page.evaluate("document.activeElement.id")
    page.wait_for_url(re.compile(r"start=9&end=12"))
    assert after and page.evaluate("document.activeElement.id") == after
    assert len(sent) == 1
    assert "must end after it starts" not in page.content()
    # "From" stepped onto the end takes it along (the three hours chosen: 12 to 15).
    page.focus("#hour-start")
    for _ in range(4):
        page.keyboard.press("ArrowDown")
    assert (page.input_value("#hour-start"), page.input_value("#hour-end")) == ("13", "15")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"start=13&end=15"))
    assert len(sent) == 2
    assert "must end after it starts" not in page.content()


def test_the_box_grid_and_the_hour_row_are_one_tab_stop_each(new_page: Any) -> None:
    """By Tab alone class C was some 130 presses (100 boxes, then 24 hours); each grid is one
    stop, the arrow keys move inside it, and without JavaScript every button stays a stop."""
    url = f"/book/?cls=C&room=7&date={DAY.isoformat()}&start=9&end=11"
    stops = "document.querySelectorAll('.grid > button:not([tabindex=\"-1\"]):enabled').length"
    page = new_page()
    page.goto(url)
    assert page.evaluate(stops) == 2
    focused = "document.activeElement.id"
    page.focus("#box-cell-1")
    page.keyboard.press("ArrowRight")
    assert page.evaluate(focused) == "box-cell-2"
    page.keyboard.press("ArrowDown")  # a row further down, however many columns a row has
    below = page.evaluate(focused)
    assert below != "box-cell-2" and page.evaluate("document.activeElement.offsetTop") > 0
    page.keyboard.press("End")
    assert page.evaluate(focused) == "box-cell-100"
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"box=100"))
    page.wait_for_function("() => document.activeElement.id === 'box-cell-100'")
    assert page.evaluate(stops) == 2
    page.keyboard.press("Tab")  # out of the grid at once: the next control is the From list
    assert page.evaluate(focused) == "hour-start"
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate(focused) == "hour-cell-9"  # the hour row's stop: its chosen hour
    page.keyboard.press("Tab")
    assert not page.evaluate(focused).startswith("hour-cell-")
    plain = new_page(javascript=False)
    plain.goto(url)
    assert plain.evaluate(stops) == 100 + 24
