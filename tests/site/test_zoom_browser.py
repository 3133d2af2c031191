"""Pages at 200% zoom on a 390 px phone: a 195 x 422 CSS px viewport at device scale 2 (WCAG
1.4.10, reflow). Nothing may stick out sideways, in either language: the class cards of the
home page were 240 px wide, the booking page's hour grid (and in Chinese its box grid) and the
catalog's query form wider than the screen."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
import redis

from catalog.demo import load_demo

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, ViewportSize

pytestmark = pytest.mark.browser

ZOOMED_PHONE: ViewportSize = {"width": 195, "height": 422}
PAGES = [
    "/",
    "/book/?cls=B&room=12&start=9",
    "/book/?cls=C&room=12&box=5&start=9",
    "/book/?cls=C&room=12&box=5&start=9&end=12&date=2026-12-05",
    "/book/find/?cls=C",
    "/catalog/",
    "/catalog/?all=ruby&not=web",
    "/book/pickup/",
]
# What sticks out: each element wider than the page, by its id or tag and class.
WIDER_THAN_THE_SCREEN = """() => [...document.querySelectorAll("body *")]
  .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
  .slice(0, 8).map(e => (e.id ? "#" + e.id : e.tagName + "." + e.className)
    + " " + Math.round(e.getBoundingClientRect().right) + "px")"""


@pytest.fixture(params=["en-US", "zh-CN"])
def zoomed(request: pytest.FixtureRequest, browser: Browser, live_site: str) -> Iterator[Page]:
    context = browser.new_context(
        base_url=live_site, locale=request.param, viewport=ZOOMED_PHONE, device_scale_factor=2
    )
    yield context.new_page()
    context.close()


def test_no_page_scrolls_sideways_at_200_percent_on_a_phone(zoomed: Page, r: redis.Redis) -> None:
    load_demo(r)
    wide = {}
    for url in PAGES:
        zoomed.goto(url)
        if zoomed.evaluate("document.documentElement.scrollWidth > window.innerWidth"):
            wide[url] = zoomed.evaluate(WIDER_THAN_THE_SCREEN)
    assert not wide, "\n".join(f"{url}: {found}" for url, found in wide.items())
