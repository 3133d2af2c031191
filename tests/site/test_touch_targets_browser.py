"""Touch targets on a phone (390 px): every control a finger presses is at least 44 px tall
(WCAG 2.5.5, Apple's and Google's guidance): buttons and `.button` links, text, number, date,
email and password fields, selects, and the label row of a radio or a checkbox. The header's
language switch was 26-28 px tall on every page, the building map's radio and checkbox rows
24 px and its selects 33 px, the booking page's box buttons 38 px, the primary buttons and the
account forms' fields 40-42 px. Bigger controls must not make a page scroll sideways.

English with JavaScript and Chinese without: the probe that found them measured both."""

from __future__ import annotations

from typing import Any

import pytest

from tests.booking.web.test_booking_browser import DAY, booking_site, new_page, season
from tests.conftest import browser_sign_in

pytestmark = pytest.mark.browser
__all__ = ["booking_site", "new_page", "season"]  # fixtures shared with the booking page tests

PHONE = 390
TALL_ENOUGH = 43.5  # 44 px, less what rounding a fractional layout may take off
# Each page, and a control it must show (else the page measured is not the one meant).
SIGNED_IN_PAGES = {
    "/": "a.button",
    f"/book/?cls=C&room=7&box=5&start=10&end=12&date={DAY.isoformat()}": "form.book-form button",
    "/book/find/": "#map-free",
}
SIGNED_OUT_PAGES = {"/accounts/login/": "#id_password", "/accounts/signup/": "#id_password2"}
# Each visible control shorter than a fingertip: its tag, id or class, words and size. A radio
# or a checkbox is pressed by its label row (the label holding it, or naming it with for=).
SHORT_CONTROLS = """(tallEnough) => {
  const fields = "input:not([type=hidden]):not([type=checkbox]):not([type=radio])";
  const controls = new Set(document.querySelectorAll(`button, a.button, select, ${fields}`));
  for (const box of document.querySelectorAll("input[type=checkbox], input[type=radio]")) {
    for (const label of box.labels) controls.add(label);
  }
  const shown = (e) => e.checkVisibility({visibilityProperty: true})
    && !e.closest(".visually-hidden");
  const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "")
    + (e.className ? "." + String(e.className).trim().split(/\\s+/).join(".") : "");
  const words = (e) => (e.tagName === "SELECT" ? e.selectedOptions[0]?.text
    : e.innerText || e.value) || "";
  return [...controls].filter(shown).map((e) => [e, e.getBoundingClientRect()])
    .filter(([e, box]) => box.height < tallEnough)
    .map(([e, box]) => `${name(e)} "${words(e).trim().slice(0, 30)}"`
      + ` ${Math.round(box.width)}x${Math.round(box.height * 10) / 10}`);
}"""


def short_controls(page: Any, url: str, meant: str) -> list[str]:
    """The page's controls under 44 px tall, and whether it is wider than the phone."""
    page.goto(url)
    assert page.locator(meant).first.is_visible(), f"{url} shows no {meant}"
    short: list[str] = page.evaluate(SHORT_CONTROLS, TALL_ENOUGH)
    width = page.evaluate("document.documentElement.scrollWidth")
    if width > PHONE:
        short.append(f"the page scrolls sideways: {width} px wide")
    return short


@pytest.mark.parametrize(
    ("locale", "javascript"), [("en-US", True), ("zh-CN", False)], ids=["en-js", "zh-nojs"]
)
def test_every_control_on_a_phone_is_a_fingertip_tall(
    new_page: Any, buyer: Any, locale: str, javascript: bool
) -> None:
    found: dict[str, list[str]] = {}
    signed_out = new_page(locale=locale, javascript=javascript, width=PHONE)
    for url, meant in SIGNED_OUT_PAGES.items():
        found[url] = short_controls(signed_out, url, meant)
    signed_in = new_page(locale=locale, javascript=javascript, width=PHONE)
    browser_sign_in(signed_in, buyer)
    for url, meant in SIGNED_IN_PAGES.items():
        found[url] = short_controls(signed_in, url, meant)
    offenders = {url: short for url, short in found.items() if short}
    assert not offenders, "\n".join(f"{url}:\n  " + "\n  ".join(s) for url, s in offenders.items())
