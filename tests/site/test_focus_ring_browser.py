"""The focus ring is seen on every background (WCAG 1.4.11, 3:1 against what it touches): the
amber #f59e0b ring had about 2:1 against the white cards and the #f4f5f8 page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser

PAGE = "#f4f5f8"
CARD = "#ffffff"


def luminance(colour: tuple[int, ...]) -> float:
    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in colour[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(one: tuple[int, ...], other: tuple[int, ...]) -> float:
    a, b = sorted((luminance(one), luminance(other)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def rgb(css: str) -> tuple[int, ...]:
    if css.startswith("#"):
        return tuple(int(css[i : i + 2], 16) for i in (1, 3, 5))
    return tuple(int(n) for n in re.findall(r"\d+", css)[:3])


def ring(page: Page, selector: str) -> tuple[tuple[int, ...], str]:
    """The outline colour of `selector` focused from the keyboard, and its box-shadow."""
    page.focus(selector)
    style = page.evaluate(
        "s => { const c = getComputedStyle(document.querySelector(s));"
        " return [c.outlineColor, c.outlineStyle, c.boxShadow]; }",
        selector,
    )
    assert style[1] == "solid", (selector, style)
    return rgb(style[0]), style[2]


def test_the_focus_ring_has_3_to_1_on_the_page_the_cards_and_the_header(page: Page) -> None:
    page.goto("/book/?cls=C&room=7&box=5&start=9&end=11")
    page.keyboard.press("Tab")  # the keyboard was used: :focus-visible rings every focus
    for selector in ("#room-input", "#box-cell-5", "#room-show"):
        colour, halo = ring(page, selector)
        assert contrast(colour, rgb(PAGE)) >= 3 and contrast(colour, rgb(CARD)) >= 3, selector
        # A white halo inside the ring keeps it apart from a dark (chosen) button.
        assert "rgb(255, 255, 255)" in halo and "2px" in halo, (selector, halo)
    header = page.locator(".site-header a").first.get_attribute("href")
    colour, _ = ring(page, f".site-header a[href='{header}']")
    assert contrast(colour, rgb("#1f4e8c")) >= 3
