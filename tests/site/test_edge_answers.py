"""Answers that used to bypass the site (issue 33, points 6 and 7): gunicorn's control socket
outside the data directory, gunicorn's bare 414 page, a 405 page without X-Frame-Options."""

from __future__ import annotations

import http.client
import os
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from tests.conftest import serve_site, site_env


@pytest.fixture(scope="module")
def site_and_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The served site with a home directory of its own (where gunicorn's control socket went)."""
    home = tmp_path_factory.mktemp("home")
    env = site_env(str(settings.REDIS_URL), tmp_path_factory.mktemp("site"), HOME=str(home))
    env.pop("XDG_RUNTIME_DIR", None)
    process, base = serve_site(env, workers=1)
    yield base, home
    process.terminate()
    process.wait(timeout=10)


def raw_get(base: str, path: str) -> tuple[int, dict[str, str], str]:
    parsed = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(parsed.hostname or "", parsed.port, timeout=10)
    conn.request("GET", path)
    answer = conn.getresponse()
    body = answer.read().decode()
    conn.close()
    return answer.status, {k.lower(): v for k, v in answer.getheaders()}, body


def test_gunicorn_leaves_no_control_socket_in_the_home_directory(
    site_and_home: tuple[str, Path],
) -> None:
    _base, home = site_and_home
    assert not (home / ".gunicorn").exists(), os.listdir(home / ".gunicorn")


def test_a_request_line_over_four_kilobytes_reaches_the_site(
    site_and_home: tuple[str, Path],
) -> None:
    base, _home = site_and_home
    status, headers, body = raw_get(base, "/catalog/?all=" + "x" * 5000)
    assert status != 414
    assert body.startswith("<!DOCTYPE html>")
    assert headers["x-frame-options"] == "DENY"


def test_a_request_line_too_long_even_for_gunicorn_gets_the_sites_page_and_headers(
    site_and_home: tuple[str, Path],
) -> None:
    base, _home = site_and_home
    status, headers, body = raw_get(base, "/catalog/?all=" + "y" * 20_000)
    assert status == 414
    assert body.startswith("<!DOCTYPE html>") and '<html lang="en">' in body
    assert "yyyy" not in body  # the refused request is not quoted back
    for name in ("content-security-policy", "x-frame-options", "x-content-type-options"):
        assert name in headers, name
    assert headers["x-frame-options"] == "DENY"


def test_the_405_page_carries_x_frame_options() -> None:
    answer = Client().get("/accounts/logout/")
    assert answer.status_code == 405
    assert answer["X-Frame-Options"] == "DENY"
    assert answer["Content-Security-Policy"]
