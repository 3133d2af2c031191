"""The building map and honest, current pickers in Debian's Chromium against the served site
(desktop and phone, English and Chinese, with and without JavaScript)."""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from playwright.sync_api import expect

from booking.domain.parser import slot_request_parse
from booking.domain.rules import booking_new_id, hold_new_id
from booking.engine.bookings import bookings_of
from booking.engine.claims import booking_claim
from booking.engine.holds import booking_hold
from tests.booking.web.test_booking_browser import CODE, DAY, booking_site, new_page, season
from tests.conftest import browser_sign_in

pytestmark = pytest.mark.browser
__all__ = ["booking_site", "new_page", "season"]  # fixtures shared with the booking page tests

EVERY_BOX = list(range(1, 101))


def claim(r: redis.Redis, owner: Any, cls: str, room: int, **extra: Any) -> None:
    """A booking made by the engine, as another buyer would have made it."""
    request = slot_request_parse(cls=cls, room=room, dates=[DAY], **extra)
    made = booking_claim(
        client=r, owner_id=str(owner.id), request=request, booking_id=booking_new_id(room=room)
    )
    assert made.ok, made


def hold(r: redis.Redis, owner: Any, cls: str, room: int, **extra: Any) -> dt.datetime:
    request = slot_request_parse(cls=cls, room=room, dates=[DAY], **extra)
    made = booking_hold(
        client=r, owner_id=str(owner.id), request=request, hold_id=hold_new_id(room=room)
    )
    assert made.ok and made.hold is not None
    return made.hold.expires_at


@pytest.mark.parametrize(
    ("locale", "javascript", "width"),
    [("en-US", True, 1280), ("zh-CN", True, 390), ("en-US", False, 390), ("zh-CN", False, 1280)],
    ids=["desktop-en-js", "phone-zh-js", "phone-en-nojs", "desktop-zh-nojs"],
)
def test_a_buyer_finds_a_free_class_c_box_on_the_map_and_books_it_in_four_clicks(
    new_page: Any,
    buyer: Any,
    second_buyer: Any,
    r: redis.Redis,
    locale: str,
    javascript: bool,
    width: int,
    screenshot_dir: Path,
) -> None:
    # Rooms 1 to 3 are full from 10:00 to 12:00; room 4 has box 1 taken.
    for room in (1, 2, 3):
        claim(r, second_buyer, "C", room, hour_start=10, hour_end=12, boxes=EVERY_BOX)
    claim(r, second_buyer, "C", 4, hour_start=10, hour_end=11, boxes=[1])
    page = new_page(locale=locale, javascript=javascript, width=width)
    browser_sign_in(page, buyer)
    page.goto("/")
    page.locator("a[href='/book/find/']").first.click()  # the home page's first button
    page.wait_for_url(re.compile(r"/book/find/$"))
    clicks = 0
    page.check("#map-class-C")
    page.fill("#map-date", DAY.isoformat())
    page.select_option("#map-start", "10")
    page.select_option("#map-end", "12")
    page.click("#map-show")
    clicks += 1
    page.wait_for_url(re.compile(r"cls=C"))
    page.screenshot(path=str(screenshot_dir / f"map-{locale}-{width}.png"), full_page=False)
    assert "sold out" in page.locator("#map-room-001").inner_text().lower() or (
        "缺" in page.locator("#map-room-001").inner_text()
    )
    assert page.locator("#map-room-001 a[href^='/book/?']").count() == 0
    page.locator("#map-room-004 a[href^='/book/?']").click()  # "Book box 2"
    clicks += 1
    page.wait_for_url(re.compile(r"/book/\?cls=C&room=4&box=2&start=10&end=12"))
    page.locator("#summary form.book-form button[type=submit]").click()  # Hold and review
    clicks += 1
    page.wait_for_url(re.compile(r"/book/confirm/"))
    page.locator("form[action='/book/claim/#summary'] button[type=submit]").click()  # Book
    clicks += 1
    page.wait_for_url(re.compile(r"/book/done/"))
    assert CODE.fullmatch(page.locator("#pickup-code").inner_text().strip())
    assert clicks <= 4
    [booking] = bookings_of(client=r, owner_id=str(buyer.id))
    made = (booking.room, booking.boxes, booking.hours, booking.dates)
    assert made == (4, (2,), (10, 12), (DAY,))
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width


def test_the_map_tells_held_from_sold_and_opens_a_rooms_box_grid(
    new_page: Any, buyer: Any, second_buyer: Any, r: redis.Redis
) -> None:
    claim(r, second_buyer, "A", 8)
    hold(r, second_buyer, "A", 9)
    page = new_page(javascript=False, width=390)
    browser_sign_in(page, buyer)
    page.goto(f"/book/find/?cls=A&date={DAY.isoformat()}")
    held = page.locator("#map-room-009").inner_text()
    assert re.search(r"Held until \d\d:\d\d Shanghai time", held), held
    assert "Sold out" in page.locator("#map-room-008").inner_text()
    assert "Free" in page.locator("#map-room-010").inner_text()
    # On the phone the tiles go two a row (one a row, 300 rooms were 25,000 px to scroll),
    # nothing wider than the screen.
    first, second = (page.locator(f"#map-room-00{n}").bounding_box() for n in (1, 2))
    assert first and second and abs(first["y"] - second["y"]) < 1 and second["x"] > first["x"]
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    claim(r, second_buyer, "C", 12, hour_start=9, hour_end=10, boxes=[5])
    hold(r, second_buyer, "C", 12, hour_start=10, hour_end=11, boxes=[5])
    page.goto(f"/book/find/?cls=C&date={DAY.isoformat()}&start=9&end=11&room=12")
    row = page.locator("#room-grid tbody tr").nth(4)
    cells = row.locator("td:not(.w)")  # the hours (after the "Whole range" cell)
    assert cells.nth(0).inner_text() == "sold out"
    assert re.fullmatch(r"held until \d\d:\d\d Shanghai time", cells.nth(1).inner_text())


def test_a_second_buyers_open_map_shows_the_slot_taken_within_ten_seconds(
    new_page: Any, buyer: Any, second_buyer: Any, r: redis.Redis
) -> None:
    page = new_page()
    browser_sign_in(page, second_buyer)
    page.goto(f"/book/find/?cls=C&date={DAY.isoformat()}&start=10&end=11&room=21")
    page.evaluate("window.stillTheSamePage = true")
    cell = page.locator("#room-grid tbody tr").nth(6).locator("td:not(.w)").nth(0)
    assert cell.inner_text() == "free"
    claim(r, buyer, "C", 21, hour_start=10, hour_end=11, boxes=[7])
    # no reload: the results refresh themselves (htmx, every STRONGROOM_POLL_SECONDS)
    expect(page.locator("#room-grid tbody tr").nth(6).locator("td:not(.w)").nth(0)).to_have_text(
        "sold out", timeout=10_000
    )
    assert page.evaluate("window.stillTheSamePage") is True
    assert "99 of 100 boxes free" in page.locator("#map-room-021").inner_text()


def test_a_second_buyers_open_booking_page_shows_the_slot_taken_within_ten_seconds(
    new_page: Any, buyer: Any, second_buyer: Any, r: redis.Redis
) -> None:
    page = new_page(width=390)
    browser_sign_in(page, second_buyer)
    page.goto(f"/book/?cls=C&room=23&box=7&start=10&end=12&date={DAY.isoformat()}")
    page.evaluate("window.stillTheSamePage = true")
    assert page.locator("#summary form.book-form").count() == 1  # free: Hold and review
    claim(r, buyer, "C", 23, hour_start=11, hour_end=12, boxes=[7])
    expect(page.locator("#choice-blocked")).to_contain_text(
        "Taken while you were choosing", timeout=10_000
    )
    assert page.evaluate("window.stillTheSamePage") is True
    assert page.locator("#summary form.book-form").count() == 0  # no Hold for a taken slot
    assert (
        "11:00–12:00 Shanghai time · box 7: sold out"
        in page.locator("#choice-blocked").inner_text()
    )
    assert page.locator("#alternatives a").count() >= 1


@pytest.mark.parametrize(("locale", "width"), [("en-US", 1280), ("zh-CN", 390)], ids=["en", "zh"])
def test_an_open_map_swaps_in_only_the_rooms_that_changed(
    new_page: Any, buyer: Any, second_buyer: Any, r: redis.Redis, locale: str, width: int
) -> None:
    page = new_page(locale=locale, width=width)
    browser_sign_in(page, second_buyer)
    page.goto(f"/book/find/?cls=C&date={DAY.isoformat()}&start=10&end=11")
    page.evaluate("window.stillTheSamePage = true")
    mark = "document.querySelectorAll('.map-rooms > li').forEach(li => li.dataset.seen = '1')"
    page.evaluate(mark)  # a tile replaced by the refresh loses the mark
    assert page.locator(".map-rooms > li[data-seen]").count() == 300

    def changed(answer: Any) -> bool:
        return "/find/parts/results/" in answer.url and answer.status == 200

    for room, boxes in ((41, [1, 2]), (42, EVERY_BOX)):
        with page.expect_response(changed, timeout=15_000) as answer:
            claim(r, buyer, "C", room, hour_start=10, hour_end=11, boxes=boxes)
        sent = answer.value.text()
        assert sent.count("<li ") == 1 and f'id="map-room-0{room}"' in sent
        tile = page.locator(f"#map-room-0{room}")
        expect(tile).to_contain_text("98" if room == 41 else "0", timeout=5_000)
        assert page.locator(f"#map-room-0{room}[data-seen]").count() == 0
        assert page.locator(".map-rooms > li[data-seen]").count() == 299  # the rest untouched
        page.evaluate(mark)
    assert page.locator(".map-rooms > li").count() == 300
    assert page.locator("#map-room-042").get_attribute("class") == "sold_out"
    expect(page.locator("#map-counts")).to_contain_text("298")
    assert page.evaluate("window.stillTheSamePage") is True
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_an_open_map_of_only_free_rooms_drops_a_room_sold_meanwhile(
    new_page: Any, buyer: Any, second_buyer: Any, r: redis.Redis
) -> None:
    """A change there sends every result (booking.web.find_refresh), swapped whole."""
    page = new_page()
    browser_sign_in(page, second_buyer)
    page.goto(f"/book/find/?cls=C&date={DAY.isoformat()}&start=10&end=11&free=1")
    page.evaluate("window.stillTheSamePage = true")
    assert page.locator(".map-rooms > li").count() == 300
    claim(r, buyer, "C", 41, hour_start=10, hour_end=11, boxes=EVERY_BOX)
    expect(page.locator("#map-room-041")).to_have_count(0, timeout=15_000)
    assert page.locator(".map-rooms > li").count() == 299
    expect(page.locator("#map-counts")).to_contain_text("1 room sold out")
    assert page.evaluate("window.stillTheSamePage") is True
    # the swapped results poll on, with the new token: the next sale is seen too
    with page.expect_response(
        lambda answer: "/find/parts/results/" in answer.url and answer.status == 200,
        timeout=15_000,
    ) as answer:
        claim(r, buyer, "C", 42, hour_start=10, hour_end=11, boxes=EVERY_BOX)
    expect(page.locator("#map-room-042")).to_have_count(0, timeout=5_000)
    assert page.locator(".map-rooms > li").count() == 298 and answer.value.ok


@pytest.mark.parametrize(
    ("locale", "javascript", "width"),
    [("en-US", True, 1280), ("zh-CN", False, 390)],
    ids=["desktop-en-js", "phone-zh-nojs"],
)
def test_the_pickers_never_offer_a_hold_the_page_shows_as_taken(
    new_page: Any,
    buyer: Any,
    second_buyer: Any,
    r: redis.Redis,
    locale: str,
    javascript: bool,
    width: int,
    screenshot_dir: Path,
) -> None:
    claim(r, second_buyer, "B", 31, hour_start=8, hour_end=10)
    claim(r, second_buyer, "A", 31)
    hold(r, second_buyer, "C", 31, hour_start=6, hour_end=7, boxes=[3])
    page = new_page(locale=locale, javascript=javascript, width=width)
    browser_sign_in(page, buyer)
    day = DAY.isoformat()
    choices = [
        f"cls=B&room=31&start=6&end=10&date={day}",  # 08-09 sold: the example
        f"cls=B&room=31&start=8&end=9&date={day}",
        f"cls=A&room=31&date={day}",
        f"cls=C&room=31&box=3&start=6&end=8&date={day}",  # box 3 held at 06
        f"cls=B&room=31&start=10&end=12&date={day}",  # free: the control
    ]
    for query in choices:
        page.goto(f"/book/?{query}")
        taken_shown = (
            page.locator("#pick-hours .cell--taken[aria-pressed=true]").count()
            + page.locator("#choice-blocked").count()
            + page.locator(f"#day-{day}.day--sold_out, #day-{day}.day--sold_for").count()
            + page.locator(f"#day-{day}.day--held").count()
        )
        offers_hold = page.locator("#summary form.book-form").count()
        assert offers_hold == (0 if taken_shown else 1), query
        if query == choices[0]:
            shot = screenshot_dir / f"booking-blocked-{locale}-{width}.png"
            page.screenshot(path=str(shot), full_page=True)
            pickers, summary = (
                page.locator("#pickers").bounding_box(),
                page.locator("#summary").bounding_box(),
            )
            assert pickers and summary
            if width >= 1000:  # side by side: the pickers wide on the left, the summary right
                assert pickers["width"] > 2 * summary["width"] and summary["x"] > pickers["x"]
    assert taken_shown == 0  # the control: a free choice is offered


def test_on_the_booking_page_a_held_day_reads_held_until_and_a_sold_one_sold_out(
    new_page: Any, buyer: Any, second_buyer: Any, r: redis.Redis
) -> None:
    claim(r, second_buyer, "A", 33)
    hold(r, second_buyer, "A", 34)
    page = new_page()
    browser_sign_in(page, buyer)
    page.goto(f"/book/?cls=A&room=33&month={DAY.strftime('%Y-%m')}")
    assert "Sold out" in page.locator(f"#day-{DAY.isoformat()}").inner_text()
    page.goto(f"/book/?cls=A&room=34&month={DAY.strftime('%Y-%m')}")
    held = page.locator(f"#day-{DAY.isoformat()}").inner_text()
    assert re.search(r"Held until \d\d:\d\d$", held), held  # the zone: once, under the cells
    assert "Times in the calendar are Shanghai time." in page.locator("#calendar").inner_text()
    assert page.locator(f"#day-{DAY.isoformat()}").is_disabled()


def test_keyboard_focus_stays_on_the_calendar_at_its_first_and_last_month(new_page: Any) -> None:
    """Through the months by the keyboard: where the pressed link is gone (the last month on
    sale, the first), the focus goes to the other month link, not to the top of the page."""
    page = new_page()
    page.goto("/book/?cls=A&room=12")
    for pressed, other in (("calendar-next", "calendar-previous"),
                           ("calendar-previous", "calendar-next")):  # fmt: skip
        page.focus(f"#{pressed}")
        while page.locator(f"#{pressed}").count():
            caption = page.locator("#calendar caption").inner_text()
            page.keyboard.press("Enter")
            expect(page.locator("#calendar caption")).not_to_have_text(caption)
        expect(page.locator(f"#{other}")).to_be_focused()


@pytest.mark.long
def test_the_map_passes_the_accessibility_check_and_refreshes_within_the_csp(
    new_page: Any, buyer: Any, second_buyer: Any, r: redis.Redis
) -> None:
    from tests.axe_support import AXE, axe_violations

    assert AXE.exists(), "run `npm ci` (make test does) to get axe-core"
    claim(r, second_buyer, "C", 5, hour_start=10, hour_end=11, boxes=[1, 2])
    hold(r, second_buyer, "C", 6, hour_start=10, hour_end=11, boxes=EVERY_BOX)
    grid = f"/book/find/?cls=C&date={DAY.isoformat()}&start=9&end=12&room=5"
    checked = new_page(axe=True, width=390)
    # A room's box grid open and a class A map of days (the map with nothing chosen, and a
    # class C map, are among the pages tests/site/test_axe_pages.py checks).
    for url in (grid, f"/book/find/?cls=A&date={DAY.isoformat()}&days=3&free=1"):
        checked.goto(url)
        assert axe_violations(checked) == [], url
    page = new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    browser_sign_in(page, buyer)
    page.goto(grid)
    with page.expect_response(lambda answer: "/find/parts/results/" in answer.url, timeout=10_000):
        pass
    with page.expect_response(lambda answer: "/book/parts/panel/" in answer.url, timeout=10_000):
        page.goto(f"/book/?cls=C&room=5&box=9&start=10&end=12&date={DAY.isoformat()}")
    assert problems == [], problems


@pytest.mark.parametrize(
    ("locale", "hours"),
    [("en-US", "start=9&end=12"), ("zh-CN", "start=0&end=24")],
    ids=["en-three-hours", "zh-whole-day"],
)
def test_on_a_phone_the_box_grids_whole_range_column_is_not_clipped(
    new_page: Any, second_buyer: Any, r: redis.Redis, locale: str, hours: str
) -> None:
    claim(r, second_buyer, "C", 5, hour_start=10, hour_end=11, boxes=[1])
    page = new_page(locale=locale, javascript=False, width=390)
    page.goto(f"/book/find/?cls=C&date={DAY.isoformat()}&{hours}&room=5")
    width = page.viewport_size["width"]
    wrap = page.locator(".box-grid-wrap").bounding_box()
    assert wrap is not None
    right = min(width, wrap["x"] + wrap["width"])
    # As the page opens, without scrolling sideways: the column's head and its links are seen
    # whole (not cut off by the grid's scroll box or the screen's edge).
    for target in (".box-grid thead th:nth-child(2)", "#grid-book-2", "#grid-book-3"):
        box = page.locator(target).bounding_box()
        assert box is not None, target
        assert wrap["x"] - 0.5 <= box["x"] and box["x"] + box["width"] <= right + 0.5, (target, box)
    assert page.locator(".box-grid thead th:nth-child(2)").inner_text() in (
        "Whole range",
        "整个时段",
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    # The hours past the screen's edge are said to be there (a phone only).
    assert page.locator(".scroll-hint").is_visible()
    page.set_viewport_size({"width": 1280, "height": 900})
    assert not page.locator(".scroll-hint").is_visible()


@pytest.mark.parametrize(
    ("locale", "width", "banner_words"),
    [("en-US", 390, "is held for you until"), ("zh-CN", 1280, "的时段为您暂留至")],
    ids=["phone-en", "desktop-zh"],
)
def test_a_sold_out_room_on_the_map_leads_to_the_waiting_list_and_the_hold_shows_everywhere(
    new_page: Any,
    buyer: Any,
    second_buyer: Any,
    r: redis.Redis,
    locale: str,
    width: int,
    banner_words: str,
) -> None:
    from booking.engine.cancel import booking_cancel
    from strongroom.outbox_delivery import outbox_send

    request = slot_request_parse(cls="A", room=5, dates=[DAY])
    made = booking_claim(
        client=r, owner_id=str(second_buyer.id), request=request,
        booking_id=booking_new_id(room=5),
    )  # fmt: skip
    assert made.ok and made.booking is not None
    page = new_page(locale=locale, javascript=False, width=width)
    browser_sign_in(page, buyer)
    page.goto(f"/book/find/?cls=A&date={DAY.isoformat()}")
    page.locator("#map-room-005 a[href^='/book/wait/']").click()
    page.wait_for_url(re.compile(r"/book/wait/\?"))
    page.locator("form[action='/book/wait/'] button[type=submit]").click()
    page.wait_for_url(re.compile(r"/book/mine/"))
    assert page.locator("#priority-banner").count() == 0
    assert booking_cancel(
        client=r, booking_id=made.booking.id, actor_id=str(second_buyer.id),
        actor_is_staff=False,
    ).ok  # fmt: skip
    outbox_send(client=r)  # the mail sender tells the buyer (the site's own may be first)
    for path in ("/", "/catalog/", "/book/find/"):
        page.goto(path)
        expect(page.locator("#priority-banner")).to_contain_text(banner_words, timeout=10_000)
        box = page.locator("#priority-banner").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    page.locator("#priority-banner a").first.click()
    page.wait_for_url(re.compile(r"/book/confirm/"))


@contextlib.contextmanager
def _phone(browser: Any, booking_site: str, someone: Any) -> Iterator[Any]:
    """A page on a phone's touch screen (375 px), signed in as `someone`."""
    context = browser.new_context(
        base_url=booking_site, viewport={"width": 375, "height": 740}, is_mobile=True,
        has_touch=True,
    )  # fmt: skip
    try:
        page = context.new_page()
        browser_sign_in(page, someone)
        yield page
    finally:
        context.close()


def test_on_a_touch_screen_the_map_s_links_are_a_fingertip_tall(
    browser: Any, booking_site: str, buyer: Any
) -> None:
    with _phone(browser, booking_site, buyer) as page:
        page.goto(f"/book/find/?cls=C&date={DAY.isoformat()}&start=8&end=10&room=5")
        cell = page.locator("#room-grid tbody td > a").nth(3).bounding_box()
        room = page.locator("#map-room-006 > a").first.bounding_box()
    assert cell is not None and room is not None
    assert cell["height"] >= 40 and cell["width"] >= 40, cell  # 44 px on this screen
    assert room["height"] >= 40, room


def test_on_a_phone_a_partly_taken_day_s_hours_stay_inside_its_cell(
    browser: Any, booking_site: str, buyer: Any, second_buyer: Any, r: redis.Redis
) -> None:
    claim(r, second_buyer, "B", 202, hour_start=10, hour_end=11)
    with _phone(browser, booking_site, buyer) as page:
        page.goto(f"/book/?cls=B&room=202&start=9&end=12&date={DAY}&month={DAY:%Y-%m}")
        day = page.locator(f"#day-{DAY}")
        assert "taken" in day.inner_text()  # its hours, run by run
        cell, note = day.bounding_box(), day.locator("small").bounding_box()
    assert cell is not None and note is not None
    assert note["x"] >= cell["x"] and note["x"] + note["width"] <= cell["x"] + cell["width"]
