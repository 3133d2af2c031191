"""axe-core on every page family (tests/pages_support.py: visitor, buyer and staff, refused forms
included), in English and Chinese, on a desktop and a phone: no serious or critical violation.
(About two minutes on a quiet two-core machine.)

One browser for the whole run: each page's HTML is rendered by the test client and laid into a
page of the served site (its stylesheets and scripts load from there), then axe runs on it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from playwright.sync_api import Browser, Page

from tests.conftest import ROOT
from tests.pages_support import site_pages

pytestmark = pytest.mark.browser

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 740}
# English on both; Chinese on the phone, whose narrow layout is where its longer lines differ.
VIEWPORTS = {"en": {"desktop": DESKTOP, "phone": PHONE}, "zh-hans": {"phone": PHONE}}


@pytest.fixture
def axe_page(browser: Browser, live_site: str) -> Iterator[Page]:
    # axe-core goes in as a script tag, which the site's CSP rightly refuses.
    context = browser.new_context(base_url=live_site, bypass_csp=True)
    page = context.new_page()
    # One address of the site: every page laid in keeps it, so relative links resolve there.
    page.goto("/no-such-page/")
    yield page
    context.close()


def violations(page: Page, html: str) -> list[dict[str, Any]]:
    """Serious and critical axe-core violations of `html` shown in `page`."""
    page.set_content(html, wait_until="load")
    # The window outlives the content laid into it: axe-core is loaded once.
    if page.evaluate("typeof axe === 'undefined'"):
        page.add_script_tag(path=str(AXE))
    # Only the violations are reported in full: the passes would cost as much again.
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:3]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_every_page_family_has_no_serious_axe_violation(
    language: str, axe_page: Page, r: redis.Redis, client_for: Any, buyer: Any,
    second_buyer: Any, staff: Any, settings: Any,
) -> None:  # fmt: skip
    pages = site_pages(
        r, client_for=client_for, buyer=buyer, second_buyer=second_buyer, staff=staff,
        settings=settings, language=language,
    )  # fmt: skip
    found = {}
    for device, viewport in VIEWPORTS[language].items():
        axe_page.set_viewport_size(viewport)  # type: ignore[arg-type]
        for label, html in pages.items():
            if bad := violations(axe_page, html):
                found[f"{device} {label}"] = bad
    assert not found, "\n".join(f"{label}: {bad}" for label, bad in found.items())


def test_axe_finds_the_faults_fixed_here(axe_page: Page) -> None:
    """The control: a list given a role and a link named unlike its text are caught."""
    bad = (
        '<!DOCTYPE html><html lang="en"><head><title>x</title></head><body><main>'
        '<ul role="alert"><li>refused</li></ul>'
        '<a href="/x" aria-label="Exclude web">not</a></main></body></html>'
    )
    assert {v["id"] for v in violations(axe_page, bad)} >= {"listitem"}
