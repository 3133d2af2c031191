"""The benchmark's in-memory twin (bench/twin.py), served by gunicorn as `make bench` serves it:
a twin answers what its page answers, and once its tape is made it sends nothing to the store."""

from __future__ import annotations

import re
import subprocess
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.test import Client
from django.urls import reverse

from booking.domain.keys import date_indexes
from booking.domain.rules import booking_new_id
from booking.web.forms import Choices
from catalog.services import book_add
from strongroom.keyspace import VISITS_APPLIED, VISITS_VIEWS, VISITS_VISITORS
from strongroom.serving import fetch, start_site
from tests.booking_support import day, snapshot
from tests.conftest import Someone, person_make, site_env

CALLS = "x-bench-twin-store-calls"  # bench/twin.py: the commands a twin answer sent
MONTH = Choices(cls="C", room=42, month=day(1))
PICKED = Choices(cls="C", room=42, dates=(day(16),), start=10, end=12, boxes=(7,), month=day(1))

# Page views and the record of their flushes: the served site's flusher writes them within a
# second of any page, its own included, whenever the machine lets it run (not the twin's doing).
VIEWS = (VISITS_VIEWS, VISITS_VISITORS, VISITS_APPLIED)


def booked(client: redis.Redis) -> dict[str, object]:
    """Every product key but the page-view counters, with its content."""
    return {
        key: value
        for key, value in snapshot(client).items()
        if not any(family.matches(key) for family in VIEWS)
    }


@pytest.fixture(scope="module")
def bench_site(store_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site as `make bench` serves it: bench/wsgi.py, one worker (one set of tapes)."""
    env = site_env(
        str(settings.REDIS_URL), tmp_path_factory.mktemp("bench-site"), STRONGROOM_BENCH_VIEWS="1"
    )
    process: subprocess.Popen[bytes]
    process, base = start_site(env, workers=1, app="bench.wsgi")
    yield base
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def cookie_of(client_for: Callable[[Someone], Client]) -> Callable[[Someone], str]:
    """person -> the Cookie header of a session signed in as them (a real store session)."""

    def make(someone: Someone) -> str:
        session = client_for(someone).cookies[settings.SESSION_COOKIE_NAME].value
        return f"{settings.SESSION_COOKIE_NAME}={session}"

    return make


def csrf_identity(base: str, cookie: str) -> tuple[str, str]:
    """The Cookie header with a CSRF cookie added, and the form token that goes with it."""
    _, headers, text = fetch(base, reverse("home"), cookie=cookie)  # every page has a form
    found = re.search(rf"{settings.CSRF_COOKIE_NAME}=([A-Za-z0-9]+)", headers["set-cookie"])
    token = re.search(r'name="csrfmiddlewaretoken" value="([A-Za-z0-9]+)"', text)
    assert found and token
    return f"{cookie}; {settings.CSRF_COOKIE_NAME}={found.group(1)}", token.group(1)


def same_page(html: str) -> str:
    """The page without what differs on every answer: Django masks the CSRF token anew (64
    letters and digits, in forms and in htmx's headers)."""
    return re.sub(r"\b[A-Za-z0-9]{64}\b", "<csrf>", html)


def bookings(r: redis.Redis) -> int:
    return sum(int(r.zcard(key)) for key in date_indexes())


@pytest.mark.parametrize(
    ("name", "query", "headers"),
    [
        ("booking:pick", PICKED.query(), {}),
        ("booking:calendar", MONTH.query(), {"HX-Request": "true", "HX-Target": "calendar"}),
        ("catalog:browse", "all=poetry,verse", {}),
        ("accounts:profile", "", {}),
        ("booking:pick", PICKED.query(), {"Accept-Language": "zh-hans"}),
    ],
)
def test_a_twin_answers_its_page_from_memory(
    bench_site: str,
    r: redis.Redis,
    cookie_of: Callable[[Someone], str],
    name: str,
    query: str,
    headers: dict[str, str],
) -> None:
    buyer = person_make(r, "twin_reader")
    book_add(
        client=r, book_id="odes", title="Odes", author="Anon", year=1900, tags=["poetry", "verse"]
    )
    path = reverse(name) + (f"?{query}" if query else "")
    cookie = cookie_of(buyer)
    status, _, page = fetch(bench_site, path, cookie=cookie, headers=headers)
    assert status == 200, path
    twin = "/bench/twin" + path
    first = fetch(bench_site, twin, cookie=cookie, headers=headers)
    assert first[0] == 200 and int(first[1][CALLS]) > 0  # the tape is made from the store
    before = booked(r)
    again = fetch(bench_site, twin, cookie=cookie, headers=headers)
    assert again[0] == 200
    assert again[1][CALLS] == "0"
    assert same_page(again[2]) == same_page(page)
    assert booked(r) == before


def test_a_post_twin_replays_its_first_claim_and_books_nothing_more(
    bench_site: str, r: redis.Redis, cookie_of: Callable[[Someone], str]
) -> None:
    buyer = person_make(r, "twin_buyer")
    cookie, token = csrf_identity(bench_site, cookie_of(buyer))
    claim = reverse("booking:claim")

    def form(box: int) -> str:
        fields = {"csrfmiddlewaretoken": token, "cls": "C", "room": "42", "date": "2026-12-16",
                  "start": "10", "end": "11", "box": str(box)}  # fmt: skip
        return urllib.parse.urlencode({**fields, "booking_id": booking_new_id(room=42)})

    status, headers, _ = fetch(
        bench_site, "/bench/twin" + claim, method="POST", cookie=cookie, body=form(1)
    )
    assert status == 302 and int(headers[CALLS]) > 0
    assert bookings(r) == 1
    for box in (2, 3):
        status, headers, _ = fetch(
            bench_site, "/bench/twin" + claim, method="POST", cookie=cookie, body=form(box)
        )
        assert (status, headers[CALLS]) == (302, "0")
    assert bookings(r) == 1  # the replayed claims stored nothing
    status, _, _ = fetch(bench_site, claim, method="POST", cookie=cookie, body=form(2))
    assert status == 302 and bookings(r) == 2  # the page itself still books


def test_a_race_twin_keeps_a_refusal(
    bench_site: str, r: redis.Redis, cookie_of: Callable[[Someone], str]
) -> None:
    """The contended row's twin: its first request wins the fresh slot, is asked again under a
    new id and refused; that refusal is what every later request gets."""
    buyer = person_make(r, "twin_racer")
    cookie, token = csrf_identity(bench_site, cookie_of(buyer))
    twin = "/bench/twin" + reverse("booking:claim")
    fields = {"csrfmiddlewaretoken": token, "cls": "C", "room": "43", "date": "2026-12-17",
              "start": "10", "end": "11", "box": "9"}  # fmt: skip
    answers = []
    for _ in range(3):
        body = urllib.parse.urlencode({**fields, "booking_id": booking_new_id(room=43)})
        status, headers, _ = fetch(
            bench_site, twin, method="POST", cookie=cookie, body=body,
            headers={"X-Bench-Prefer": "409"},
        )  # fmt: skip
        answers.append((status, headers[CALLS] == "0"))
    assert answers == [(409, False), (409, True), (409, True)]
    assert bookings(r) == 1  # the first attempt's win, and nothing after it
