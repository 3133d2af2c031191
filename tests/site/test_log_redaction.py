"""No secrets in the logs: a calendar subscription's secret and the reset and verification
tokens are redacted in gunicorn's access log and in Django's request log. No line for a buyer
who lost a race for a slot (409), the one answer that is expected, not a fault."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import logging
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import redis
import time_machine
from django.conf import settings as django_settings
from django.test import Client
from gunicorn.config import Config  # type: ignore[import-untyped]

from booking.domain.rules import booking_new_id
from strongroom.redact import AccessLogger, RedactingFilter, redact
from strongroom.serving import free_port, gunicorn_command
from strongroom.static_files import static_collect
from tests.booking_support import NOW, claim, day, request
from tests.conftest import ROOT, site_env

SECRET_PATHS = (
    "/book/calendar/12-Zq9secretCalendarPart.ics",
    "/accounts/verify/eyJwIjo1fQ:1tSecretVerifyToken:abcDEF/",
    "/accounts/password/reset/5/cq1xyz-SecretResetToken0123/",
)
SECRETS = ("12-Zq9secretCalendarPart", "1tSecretVerifyToken", "SecretResetToken0123")


def test_the_secret_part_of_each_link_is_redacted_and_the_rest_kept() -> None:
    assert redact("GET /book/calendar/12-abc.ics HTTP/1.1") == (
        "GET /book/calendar/[redacted].ics HTTP/1.1"
    )
    assert redact("/accounts/verify/abc:def/?next=/x") == "/accounts/verify/[redacted]/?next=/x"
    assert redact("/accounts/password/reset/5/tok-en/") == "/accounts/password/reset/5/[redacted]/"
    assert redact("/book/mine/007-abc/calendar.ics") == "/book/mine/007-abc/calendar.ics"
    for path in SECRET_PATHS:
        assert not any(secret in redact(path) for secret in SECRETS)


@pytest.fixture
def site_log() -> Iterator[io.StringIO]:
    """What the site's log handler (settings.LOGGING) writes, during the test."""
    handler = next(
        h for h in logging.getLogger().handlers
        if any(isinstance(f, RedactingFilter) for f in h.filters)
    )  # fmt: skip
    assert isinstance(handler, logging.StreamHandler)
    written = io.StringIO()
    previous = handler.setStream(written)
    try:
        yield written
    finally:
        handler.setStream(previous)


def test_djangos_request_log_names_the_path_without_its_secret(site_log: io.StringIO) -> None:
    """A bad calendar secret (404) and reset link (400) are logged as warnings; a bad
    verification link redirects (not logged)."""
    answers = [Client().get(path).status_code for path in SECRET_PATHS]
    assert answers == [404, 302, 400]
    text = site_log.getvalue()
    assert "Not Found: /book/calendar/[redacted].ics" in text, text
    assert "Bad Request: /accounts/password/reset/5/[redacted]/" in text, text
    assert not any(secret in text for secret in SECRETS), text


def test_a_lost_race_writes_no_request_log_line_and_other_refusals_still_do(
    r: redis.Redis,
    client_for: Callable[[Any], Client],
    buyer: Any,
    second_buyer: Any,
    site_log: io.StringIO,
) -> None:
    form = {"cls": "A", "room": "20", "date": day(5).isoformat()}
    client = client_for(buyer)
    with time_machine.travel(NOW, tick=False):
        assert claim(r, request("A", room=20, dates=(5,)), owner=str(second_buyer.id)).ok
        lost = client.post("/book/claim/", {**form, "booking_id": booking_new_id(room=20)})
        missing = client.get("/book/mine/020-nosuchbooking/")
    assert (lost.status_code, missing.status_code) == (409, 404)
    text = site_log.getvalue()
    assert "Conflict" not in text and "/book/claim/" not in text, text
    assert "Not Found: /book/mine/020-nosuchbooking/" in text, text


def test_the_access_logs_atoms_are_redacted() -> None:
    environ = {
        "REQUEST_METHOD": "GET", "RAW_URI": SECRET_PATHS[0], "PATH_INFO": SECRET_PATHS[0],
        "SERVER_PROTOCOL": "HTTP/1.1", "QUERY_STRING": "", "HTTP_REFERER": SECRET_PATHS[2],
    }  # fmt: skip
    response = SimpleNamespace(status="404 Not Found", sent=10, headers=[])
    request = SimpleNamespace(headers=[("REFERER", SECRET_PATHS[2])])
    atoms = AccessLogger(Config()).atoms(response, request, environ, dt.timedelta(seconds=1))
    assert not any(secret in str(value) for value in atoms.values() for secret in SECRETS)
    assert atoms["r"] == "GET /book/calendar/[redacted].ics HTTP/1.1"


@contextlib.contextmanager
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """gunicorn as `make run` starts it (access log on stdout), one worker: its address and the
    file its output goes to (read it after the block)."""
    env = site_env(str(django_settings.REDIS_URL), tmp_path / "site")
    port = free_port()
    log = tmp_path / "access.log"
    static_collect(env)
    command = gunicorn_command(bind=f"127.0.0.1:{port}", workers=1, access_log=True)
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2).close()
                break
            except OSError:
                time.sleep(0.2)
        yield base, log
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_served_sites_access_log_holds_no_secret(tmp_path: Path) -> None:
    """The request lines of links that carry a secret are written without it."""
    with served(tmp_path) as (base, log):
        for path in SECRET_PATHS:
            with contextlib.suppress(OSError):  # 4xx: only the log matters
                urllib.request.urlopen(base + path, timeout=10).close()
    text = log.read_text(errors="replace")
    assert "GET /book/calendar/[redacted].ics" in text, text
    assert not any(secret in text for secret in SECRETS), text


def test_a_head_request_gets_the_pages_headers_and_no_body_nor_a_log_warning(
    tmp_path: Path,
) -> None:
    """Django renders a page for HEAD as for GET; the site leaves the body out itself (RFC 9110),
    where gunicorn dropped it with a warning line for each request."""
    with served(tmp_path) as (base, log):
        for path in ("/catalog/", "/book/pickup/", "/"):
            with urllib.request.urlopen(base + path, timeout=10) as page:
                length = len(page.read())
            head = urllib.request.Request(base + path, method="HEAD")
            with urllib.request.urlopen(head, timeout=10) as answer:
                assert answer.status == 200 and answer.read() == b""
                assert answer.headers["Content-Length"] == str(length), path
    text = log.read_text(errors="replace")
    assert "HEAD /catalog/" in text and "no-body response" not in text, text


@pytest.mark.parametrize(
    "content_type", ["multipart/form-data", "multipart/form-data; boundary=" + "b" * 300]
)
def test_a_body_that_cannot_be_parsed_gets_400_and_one_log_line_without_a_traceback(
    r: redis.Redis,
    client_for: Callable[[Any], Client],
    buyer: Any,
    site_log: io.StringIO,
    content_type: str,
) -> None:
    """Django's multipart parser refuses a form without a boundary (or with one over 201
    characters): the visitor gets the site's 400 page, the log one line and no traceback."""
    answer = client_for(buyer).post("/book/hold/", "cls=A", content_type=content_type)
    assert answer.status_code == 400 and "nothing was changed" in answer.content.decode()
    text = site_log.getvalue()
    assert "Bad request (Unable to parse request body): /book/hold/" in text, text
    assert "Traceback" not in text and "MultiPartParserError" not in text, text
