"""The catalog in Chromium: narrowing by clicking facets and excluding a tag, with and without
JavaScript, on a phone; staff editing through the real forms."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis
from playwright.sync_api import expect

from catalog.rules import Book
from catalog.selectors import book_get
from catalog.services import books_load
from tests.conftest import Someone, browser_sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page, ViewportSize

pytestmark = pytest.mark.browser

PHONE: ViewportSize = {"width": 390, "height": 844}
SHELF = [
    ("trpl", "The Ruby Programming Language", 2008, ("ruby",)),
    ("ror", "Ruby on Rails", 2006, ("ruby", "web")),
    ("awdr", "Agile Web Development with Rails", 2005, ("ruby", "web", "agile")),
    ("erl", "Programming Erlang", 2007, ("erlang", "concurrency")),
    ("ml", "统计学习方法", 2012, ("machine-learning", "机器学习")),
]


def shelve(r: redis.Redis) -> None:
    books_load(
        client=r,
        books=[
            Book(id=i, title=t, author="Someone", year=y, description="", tags=tags)
            for i, t, y, tags in SHELF
        ],
    )


def facet(page: Page, tag: str, part: str) -> Locator:
    """The link `part` (facet__tag or facet__exclude) of the facet for `tag`."""
    name = page.locator(".facet__tag", has_text=re.compile(f"^{re.escape(tag)}$"))
    return page.locator(".facet", has=name).locator(f".{part}")


def heading(page: Page) -> str:
    return page.locator("#results-heading").inner_text().strip()


@pytest.mark.parametrize("javascript", [True, False], ids=["htmx", "no-js"])
def test_narrow_by_clicking_facets_then_exclude_a_tag(
    browser: Browser, live_site: str, r: redis.Redis, screenshot_dir: Path, javascript: bool
) -> None:
    shelve(r)
    context = browser.new_context(
        base_url=live_site, viewport=PHONE, locale="en-US", java_script_enabled=javascript
    )
    page = context.new_page()
    errors: list[str] = []
    page.on(
        "console",
        lambda m: (
            errors.append(m.text)
            if m.type == "error" and not m.location["url"].endswith("/favicon.ico")
            else None
        ),
    )
    page.goto("/catalog/")
    assert heading(page) == "5 books"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    facet(page, "ruby", "facet__tag").click()
    page.wait_for_url(re.compile(r"/catalog/\?all=ruby$"))
    expect(page.locator("#results-heading")).to_have_text("3 books")
    assert facet(page, "web", "facet__count").inner_text() == "2"

    facet(page, "web", "facet__tag").click()
    page.wait_for_url(re.compile(r"\?all=ruby&all=web$"))
    expect(page.locator("#results-heading")).to_have_text("2 books")
    assert page.locator("#q-all").input_value() == "ruby, web"

    page.locator(".chip--all", has_text="web").locator(".chip__remove").click()
    page.wait_for_url(re.compile(r"\?all=ruby$"))
    facet(page, "web", "facet__exclude").click()
    page.wait_for_url(re.compile(r"\?all=ruby&not=web$"))
    expect(page.locator("#results-heading")).to_have_text("1 book")
    assert page.locator(".book__title").all_inner_texts() == ["The Ruby Programming Language"]
    assert page.locator(".chip--not .chip__tag").inner_text() == "web"
    # The language switch returns to the filtered address, with or without htmx.
    next_field = page.locator(".lang-switch input[name=next]")
    assert next_field.input_value() == "/catalog/?all=ruby&not=web"

    page.go_back()
    page.wait_for_url(re.compile(r"\?all=ruby$"))
    expect(page.locator("#results-heading")).to_have_text("3 books")
    assert errors == [], errors  # e.g. a CSP violation
    # Last: Playwright's screenshot adds a style of its own that the CSP would report.
    page.screenshot(path=f"{screenshot_dir}/catalog-phone-{'js' if javascript else 'nojs'}.png")
    context.close()


def test_the_query_form_and_a_chinese_tag(page: Page, r: redis.Redis) -> None:
    shelve(r)
    page.goto("/catalog/")
    page.fill("#q-any", "机器学习, erlang")
    page.fill("#q-not", "concurrency")
    page.click("button:has-text('Show books')")
    expect(page.locator("#results-heading")).to_have_text("1 book")
    page.click("text=统计学习方法")
    page.wait_for_url(re.compile(r"/catalog/book/ml/$"))
    page.click("a.tag:has-text('机器学习')")
    expect(page.locator("#results-heading")).to_have_text("1 book")


def test_staff_edit_a_books_tags_in_the_browser(page: Page, r: redis.Redis, staff: Someone) -> None:
    shelve(r)
    browser_sign_in(page, staff)
    page.goto("/catalog/book/ror/")
    page.click("a:has-text('Edit')")
    page.fill("#id_tags", "ruby, rails, web")
    page.click("button:has-text('Save')")
    page.wait_for_selector("text=“Ruby on Rails” was saved.")
    assert book_get(client=r, book_id="ror").tags == ("ruby", "rails", "web")  # type: ignore[union-attr]


def test_a_new_sort_order_applies_at_once_with_javascript(page: Page, r: redis.Redis) -> None:
    """Changing "Sort by" did nothing until "Show books" was pressed."""
    shelve(r)
    page.goto("/catalog/?all=ruby")
    page.evaluate("window.stillTheSamePage = true")
    page.select_option("#q-sort", "-year")
    page.wait_for_url(re.compile(r"\?all=ruby&sort=-year$"))
    titles = page.locator(".book__title").all_inner_texts()
    assert titles[0] == "The Ruby Programming Language"  # 2008, the newest
    assert page.evaluate("window.stillTheSamePage") is True  # swapped in, not reloaded
