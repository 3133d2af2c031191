"""axe-core on every page family (tests/pages_support.py: visitor, buyer and staff, refused forms
included): no serious or critical violation. English on a desktop, Chinese on a phone: the
two languages' pages have the same markup and stylesheets with other words, so the phone's
layout is checked with the words that wrap the most, and each page family is checked once
at each width.

One browser for the whole run: each page's HTML is rendered by the test client and laid into a
tab of the served site (its stylesheets and scripts load from there), then axe runs on it. Axe
runs in a few tabs at once (each its own renderer process): the pages' checks overlap."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from playwright.sync_api import Browser, Page

from tests.axe_support import AXE, OPTIONS_JS, serious
from tests.pages_support import site_pages

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 740}
# One pass per language, about 25 s of the machine's two cores each (every page, three tabs at
# once); an English pass on the phone as well, run until 2026-11-27, never found anything.
VIEWPORT_OF = {"en": DESKTOP, "zh-hans": PHONE}
TABS = 3  # axe runs at once; more gains nothing on two cores


@pytest.fixture
def axe_tabs(browser: Browser, live_site: str) -> Iterator[list[Page]]:
    # axe-core goes in as a script tag, which the site's CSP rightly refuses.
    context = browser.new_context(base_url=live_site, bypass_csp=True)
    tabs = [context.new_page() for _ in range(TABS)]
    for tab in tabs:
        # One address of the site: every page laid in keeps it, so relative links resolve there.
        tab.goto("/no-such-page/")
    yield tabs
    context.close()


def _start(tab: Page, html: str) -> None:
    """Lay `html` into `tab` and start axe on it, without waiting for its answer."""
    tab.set_content(html, wait_until="load")
    # The window outlives the content laid into it: axe-core is loaded once.
    if tab.evaluate("typeof axe === 'undefined'"):
        tab.add_script_tag(path=str(AXE))
    tab.evaluate(f"() => {{ window.axeRun = axe.run(document, {OPTIONS_JS}); }}")


def _serious(tab: Page) -> list[dict[str, Any]]:
    """The serious and critical violations axe found in `tab` (waits for its run)."""
    return serious(tab.evaluate("async () => await window.axeRun"))


def violations(tabs: list[Page], pages: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """label -> serious and critical axe-core violations of each page that has any."""
    found = {}
    labels = list(pages)
    for start in range(0, len(labels), len(tabs)):
        batch = list(zip(tabs, labels[start : start + len(tabs)], strict=False))
        for tab, label in batch:
            _start(tab, pages[label])
        for tab, label in batch:
            if bad := _serious(tab):
                found[label] = bad
    return found


@pytest.mark.long
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_every_page_family_has_no_serious_axe_violation(
    language: str, axe_tabs: list[Page], r: redis.Redis, client_for: Any, buyer: Any,
    second_buyer: Any, staff: Any, settings: Any,
) -> None:  # fmt: skip
    pages = site_pages(
        r, client_for=client_for, buyer=buyer, second_buyer=second_buyer, staff=staff,
        settings=settings, language=language,
    )  # fmt: skip
    for tab in axe_tabs:
        tab.set_viewport_size(VIEWPORT_OF[language])  # type: ignore[arg-type]
    found = violations(axe_tabs, pages)
    assert not found, "\n".join(f"{label}: {bad}" for label, bad in found.items())


def test_axe_finds_the_faults_fixed_here(axe_tabs: list[Page]) -> None:
    """The control: a list given a role and a link named unlike its text are caught."""
    bad = (
        '<!DOCTYPE html><html lang="en"><head><title>x</title></head><body><main>'
        '<ul role="alert"><li>refused</li></ul>'
        '<a href="/x" aria-label="Exclude web">not</a></main></body></html>'
    )
    good = bad.replace(' role="alert"', "").replace('aria-label="Exclude web"', "")
    found = violations(axe_tabs, {"bad": bad, "good": good, "bad again": bad})
    assert {v["id"] for v in found["bad"]} >= {"listitem"}
    assert "good" not in found and found["bad again"] == found["bad"]
    # Only rules whose findings are never serious are switched off, and those are.
    off = axe_tabs[0].evaluate(f"() => Object.keys({OPTIONS_JS}.rules)")
    assert {"region", "heading-order", "landmark-one-main"} <= set(off)
    kept = {"color-contrast", "listitem", "label-content-name-mismatch", "button-name"}
    assert not kept & set(off)
