"""A calendar cell's note on a phone (390 px, seven cells a row): the times of a class B day
whose chosen hours are partly held, partly taken, partly free. The zone is named once under the
cells, not in each (in a cell it was broken inside the word: "Shangh" / "ai"), and no word of a
note is broken across lines."""

from __future__ import annotations

from typing import Any

import pytest
import redis

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
