"""A calendar cell's note on a phone (390 px, seven cells a row): the times of a class B day
whose chosen hours are partly held, partly taken, partly free. The zone is named once under the
cells, not in each (in a cell it was broken inside the word: "Shangh" / "ai"), and no word of a
note is broken across lines."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import redis

from booking.domain.closures import Closure
from booking.engine.closures import closure_add, closure_new_id
from tests.booking.web.test_booking_browser import DAY, booking_site, day_button, new_page, season
from tests.booking.web.test_booking_map_browser import claim, hold
from tests.conftest import browser_sign_in

pytestmark = pytest.mark.browser
__all__ = ["booking_site", "new_page", "season"]  # fixtures shared with the booking page tests

# Each Latin word and number of a note, an hour range split after its dash (where a line may
# break; Chinese breaks between any two characters): the ones drawn on more than one line.
BROKEN_WORDS = """(cell) => {
  const text = cell.querySelector('small').firstChild;
  const broken = [];
  for (const word of text.data.matchAll(/[\\p{Script=Latin}\\d:.,]+–?/gu)) {
    const range = document.createRange();
    range.setStart(text, word.index);
    range.setEnd(text, word.index + word[0].length);
    if (range.getClientRects().length > 1) broken.push(word[0]);
  }
  return broken;
}"""


@pytest.mark.parametrize(
    ("locale", "zone", "hint"),
    [
        ("en-US", "Shanghai", "Times in the calendar are Shanghai time."),
        ("zh-CN", "上海", "日历中的时间均为上海时间。"),
    ],
    ids=["en", "zh"],
)
def test_a_phone_calendar_cell_names_its_times_without_breaking_a_word(
    new_page: Any,
    buyer: Any,
    second_buyer: Any,
    r: redis.Redis,
    locale: str,
    zone: str,
    hint: str,
) -> None:
    hold(r, second_buyer, "B", 7, hour_start=8, hour_end=10)
    claim(r, second_buyer, "B", 7, hour_start=10, hour_end=11)
    page = new_page(locale=locale, width=390)
    browser_sign_in(page, buyer)
    page.goto(f"/book/?cls=B&room=7&start=8&end=12&month={DAY.strftime('%Y-%m')}")
    cell = day_button(page, DAY)
    note = cell.locator("small").inner_text()
    assert "08:00–10:00" in note and "10:00–11:00" in note and "11:00–12:00" in note, note
    assert zone not in note, note
    assert page.locator("#calendar").get_by_text(hint, exact=True).count() == 1
    assert cell.evaluate(BROKEN_WORDS) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # Only the taken hour chosen: the day is sold out for it, and that time names no zone either.
    page.goto(f"/book/?cls=B&room=7&start=10&end=11&month={DAY.strftime('%Y-%m')}")
    assert "10:00–11:00" in cell.locator("small").inner_text()
    assert page.locator("#calendar").get_by_text(hint, exact=True).count() == 1


# Each cell's note drawn wider than its cell (at 200% zoom a cell is about 25 px wide).
OVERFLOWING = """() => [...document.querySelectorAll('#calendar .day > small')].filter(
  (note) => note.getBoundingClientRect().right
    > note.parentElement.getBoundingClientRect().right + 1
).map((note) => note.textContent)"""


def test_a_long_closure_reason_and_notes_at_200_percent_zoom_stay_inside_the_page(
    new_page: Any, buyer: Any, staff: Any, r: redis.Redis
) -> None:
    """A staff reason that is one long word made the booking page 485 px wide on a 390 px
    phone; at 200% zoom (195 px) "Closed" ran into the next cells."""
    reason = "Supercalifragilistic-https://example.com/a/very/long/path/without/spaces/at/all"
    last = DAY + dt.timedelta(days=1) if DAY.day < 28 else DAY
    closure_add(client=r, actor_id=str(staff.id), closure=Closure(
        closure_new_id(), (7,), DAY, last, None, reason,
    ))  # fmt: skip
    for width in (390, 195):
        page = new_page(width=width)
        browser_sign_in(page, buyer)
        page.goto(f"/book/?cls=A&room=7&month={DAY.strftime('%Y-%m')}")
        assert reason in page.locator("#calendar-closures").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= width, width
        assert page.evaluate(OVERFLOWING) == [], width
