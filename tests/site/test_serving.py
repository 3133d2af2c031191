"""Production serving: static files, security headers, HSTS behind a proxy, the template
loader, the benchmark's reference views, and pages that satisfy the CSP in Chromium."""

from __future__ import annotations

import datetime as dt
import http.client
import os
import re
import subprocess
import sys
import urllib.parse
from typing import Any

import pytest
import redis
from django.test import Client, override_settings

from booking.domain.parser import slot_request_parse
from booking.domain.rules import booking_new_id
from booking.engine.claims import booking_claim
from catalog.demo import load_demo as load_catalog
from strongroom.middleware import CONTENT_SECURITY_POLICY
from tests.conftest import ROOT, Someone, browser_login, person_make


def fetch(base: str, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    """One GET on the served site: status, headers (lower-case names), body."""
    parsed = urllib.parse.urlsplit(base)
    assert parsed.hostname is not None, base
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    found = {name.lower(): value for name, value in response.getheaders()}
    conn.close()
    return response.status, found, body


def test_hashed_static_files_are_compressed_and_cached_for_ever(live_site: str) -> None:
    status, _headers, body = fetch(live_site, "/")
    assert status == 200
    css = re.search(r'href="(/static/strongroom/site\.[0-9a-f]{12}\.css)"', body.decode())
    assert css, "the page links the hashed stylesheet (manifest storage)"
    status, headers, body = fetch(live_site, css.group(1), **{"Accept-Encoding": "gzip, br"})
    assert status == 200
    assert headers["content-type"].startswith("text/css")
    assert headers["content-encoding"] == "br"
    assert "Accept-Encoding" in headers["vary"]
    cache = headers["cache-control"]
    assert "immutable" in cache and "public" in cache
    assert int(re.search(r"max-age=(\d+)", cache).group(1)) >= 365 * 86400  # type: ignore[union-attr]
    _status, gzipped, _body = fetch(live_site, css.group(1), **{"Accept-Encoding": "gzip"})
    assert gzipped["content-encoding"] == "gzip"
    # Without Accept-Encoding the same file comes plain, still cached for ever.
    status, plain, text = fetch(live_site, css.group(1))
    assert status == 200 and "content-encoding" not in plain and b"{" in text


def test_unhashed_static_names_are_not_cached_for_ever(live_site: str) -> None:
    status, headers, _body = fetch(live_site, "/static/strongroom/site.css")
    assert status == 200
    assert "immutable" not in headers.get("cache-control", "")


def test_pages_carry_the_security_headers_and_no_hsts_over_http(live_site: str) -> None:
    for path in ("/", "/accounts/login/", "/book/", "/catalog/", "/healthz"):
        status, headers, _body = fetch(live_site, path)
        assert status == 200, path
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "same-origin"
        assert headers["x-frame-options"] == "DENY"
        assert headers["cross-origin-opener-policy"] == "same-origin"
        assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert "strict-transport-security" not in headers, path
        assert "server" not in headers or "gunicorn" in headers["server"].lower()


def test_a_forged_forwarded_proto_is_ignored_unless_behind_a_proxy(live_site: str) -> None:
    # The test site runs without BEHIND_PROXY: X-Forwarded-Proto from a client means nothing.
    _status, headers, _body = fetch(live_site, "/", **{"X-Forwarded-Proto": "https"})
    assert "strict-transport-security" not in headers


def test_hsts_is_sent_on_https_and_behind_a_proxy_that_says_https() -> None:
    secure = Client().get("/", secure=True)
    assert secure["Strict-Transport-Security"] == "max-age=31536000"
    assert "Strict-Transport-Security" not in Client().get("/")
    proxied = ("HTTP_X_FORWARDED_PROTO", "https")
    with override_settings(SECURE_PROXY_SSL_HEADER=proxied):
        behind = Client().get("/", HTTP_X_FORWARDED_PROTO="https")
        assert behind["Strict-Transport-Security"] == "max-age=31536000"
        assert "Strict-Transport-Security" not in Client().get("/", HTTP_X_FORWARDED_PROTO="http")


def _settings_probe(code: str, **env: str) -> str:
    """Run `code` in a fresh process with the production settings (plus `env`)."""
    full = {**os.environ, "DEBUG": "0", "STRONGROOM_BENCH_VIEWS": "0", **env}
    full["DJANGO_SETTINGS_MODULE"] = "strongroom.settings"
    setup = "import django; django.setup()\n"
    done = subprocess.run(
        [sys.executable, "-c", setup + code],
        cwd=ROOT, env=full, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_production_mode_uses_the_cached_template_loader_and_manifest_static() -> None:
    code = (
        "from django.conf import settings\n"
        "from django.template import engines\n"
        "engine = engines['django'].engine\n"
        "loader = engine.template_loaders[0]\n"
        "print(type(loader).__module__, [type(l).__module__ for l in loader.loaders],"
        " settings.STORAGES['staticfiles']['BACKEND'], engine.debug)\n"
    )
    out = _settings_probe(code)
    assert out.startswith("django.template.loaders.cached "), out
    assert "django.template.loaders.filesystem" in out
    assert "django.template.loaders.app_directories" in out
    assert "whitenoise.storage.CompressedManifestStaticFilesStorage False" in out


def test_the_benchmark_reference_views_exist_only_when_enabled() -> None:
    code = "from django.urls import resolve\nprint(resolve('/bench/base').url_name)\n"
    assert _settings_probe(code, STRONGROOM_BENCH_VIEWS="1") == "base"
    missing = "from django.urls import resolve, Resolver404\n"
    missing += "try:\n    resolve('/bench/base')\n    print('found')\n"
    missing += "except Resolver404:\n    print('missing')\n"
    assert _settings_probe(missing) == "missing"
    # Parsed strictly: a typo stops start-up instead of silently enabling them.
    bad = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "strongroom.settings",
             "STRONGROOM_BENCH_VIEWS": "maybe"},
    )  # fmt: skip
    assert bad.returncode != 0 and "STRONGROOM_BENCH_VIEWS" in bad.stderr


# --- the pages satisfy the CSP in Chromium -------------------------------------------------


def _shop(r: redis.Redis) -> tuple[Someone, Someone, str, str]:
    buyer = person_make(r, "csp_buyer")
    staff = person_make(r, "csp_staff", is_staff=True)
    load_catalog(r)
    book_id = str(r.srandmember(_books_key()))
    day = dt.date(2026, 12, 20)
    request = slot_request_parse(cls="B", room=12, dates=[day], hour_start=9, hour_end=11)
    made = booking_claim(
        client=r, owner_id=str(buyer.id), request=request, booking_id=booking_new_id(room=12)
    )
    assert made.ok and made.booking is not None
    return buyer, staff, book_id, made.booking.id


def _books_key() -> str:
    from strongroom.keyspace import CATALOG_BOOKS

    return CATALOG_BOOKS.key()


def _watch(page: Any) -> list[str]:
    """Collect CSP reports and script errors of a page (the console and page errors)."""
    problems: list[str] = []

    def on_console(message: Any) -> None:
        text = message.text
        reported = message.type == "error" or "Content Security Policy" in text
        if reported and not message.location.get("url", "").endswith("/favicon.ico"):
            problems.append(f"{page.url}: {text}")

    page.on("console", on_console)
    page.on("pageerror", lambda error: problems.append(f"{page.url}: {error}"))
    return problems


@pytest.mark.browser
def test_main_pages_raise_no_csp_violation_in_chromium(
    browser: Any, live_site: str, r: redis.Redis
) -> None:
    buyer, staff, book_id, booking_id = _shop(r)
    picked = "?cls=C&room=42&box=7&start=10&end=12&date=2026-12-16&month=2026-12"
    anonymous_pages = ["/", "/accounts/login/", "/accounts/signup/", "/book/", "/book/pickup/"]
    anonymous_pages += ["/catalog/?all=web&all=ruby", f"/catalog/book/{book_id}/"]
    buyer_pages = ["/book/" + picked, "/book/mine/", f"/book/done/{booking_id}/", "/accounts/me/"]
    staff_pages = ["/staff/", "/staff/occupancy/", "/staff/bookings/", "/staff/people/"]
    staff_pages += [f"/staff/bookings/{booking_id}/", f"/staff/people/{buyer.id}/"]
    staff_pages += ["/staff/catalog/", "/staff/keyspace/", "/staff/audit/", "/staff/catalog/books/"]
    visited = 0
    for who, pages in ((None, anonymous_pages), (buyer, buyer_pages), (staff, staff_pages)):
        context = browser.new_context(base_url=live_site, locale="en-US")
        page = context.new_page()
        problems = _watch(page)
        if who is not None:
            browser_login(page, who)
        for path in pages:
            response = page.goto(path)
            assert response is not None and response.status == 200, (path, response)
            page.wait_for_load_state("networkidle")
            visited += 1
        if who is buyer:
            # An htmx swap too: pick another room's calendar month through the page's own UI.
            page.goto("/book/" + picked)
            page.locator("button[name=toggle]:not([disabled])").first.click()
            page.wait_for_load_state("networkidle")
            # A day pressed and pressed again on class A: htmx settles the swapped panel's
            # attributes, which must never set a style attribute (CSP style-src 'self').
            page.goto("/book/")
            page.check("#class-A")
            page.wait_for_load_state("networkidle")
            page.fill("#room-input", "123")
            page.click("#room-show")
            page.wait_for_load_state("networkidle")
            for _press in range(2):
                page.locator("button[name=toggle]:not([disabled])").nth(2).click()
                page.wait_for_load_state("networkidle")
            page.wait_for_timeout(300)
        context.close()
        assert problems == [], problems
    assert visited == len(anonymous_pages) + len(buyer_pages) + len(staff_pages)
