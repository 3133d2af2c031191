"""Reads sent ahead with the request's identity (strongroom/ahead.py): one round trip for the
session, its person and the view's first read, the same page as without, and nothing taken on
trust from a session that does not hold up."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
import redis
import time_machine
from django.conf import settings
from django.test import Client, override_settings

from booking.domain.rules import booking_new_id
from booking.engine.claims import booking_claim
from booking.engine.holds import booking_hold
from strongroom.ahead import command, pipeline_replies, read_together, request_reads
from strongroom.store import primaries_reached, round_trips
from tests.booking_support import NOW, request
from tests.conftest import ON_CLUSTER, Someone

CALENDAR = "/book/parts/calendar/?cls=C&room=42&month=2026-12"
PICKED = "/book/?cls=C&room=42&box=7&start=10&end=12&date=2026-12-16&month=2026-12"
HTMX = {"HX-Request": "true", "HX-Target": "calendar"}
MIDDLEWARE_WITHOUT = [m for m in settings.MIDDLEWARE if m != "strongroom.ahead.ReadAheadMiddleware"]


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def trips_and_page(client: Client, path: str, **headers: str) -> tuple[int, bytes]:
    client.get(path, headers=headers)  # the once-per-client probes, the worker's caches
    with round_trips() as trips:
        response = client.get(path, headers=headers)
    assert response.status_code == 200
    return trips.count, response.content


@pytest.mark.parametrize(("path", "headers"), [(CALENDAR, HTMX), (PICKED, {})])
def test_the_rooms_read_rides_with_the_identity_and_the_page_is_the_same(
    client_for: Callable[[Someone], Client], buyer: Someone, path: str, headers: dict[str, str]
) -> None:
    # The same session for both (a client keeps the middleware it first loaded, hence two): on
    # a cluster the session key's own slot decides how many primaries the identity reaches.
    client = client_for(buyer)
    ahead, page = trips_and_page(client, path, **headers)
    with override_settings(MIDDLEWARE=MIDDLEWARE_WITHOUT):
        alike = Client()
        alike.cookies = client.cookies
        alone, same = trips_and_page(alike, path, **headers)
    assert ahead == alone - 1 if not ON_CLUSTER else ahead <= alone
    assert _no_tokens(page) == _no_tokens(same)


def test_whose_holds_are_free_is_decided_by_the_settled_identity(
    r: redis.Redis, client_for: Callable[[Someone], Client], buyer: Someone, second_buyer: Someone
) -> None:
    """The read goes ahead before the session is settled; whose holds count as free is worked
    out after: the holder, another buyer and a forged key naming the holder each get the page
    they get without reading ahead (the forger: an anonymous visitor's)."""
    req = request(cls="C", room=42, dates=(16,), hour_start=10, hour_end=12, boxes=(7,))
    hold = booking_hold(
        client=r, owner_id=str(buyer.id), request=req, hold_id=booking_new_id(room=42), now=NOW
    )
    assert hold.ok

    def forged() -> Client:
        client = Client()
        client.cookies[settings.SESSION_COOKIE_NAME] = "x" * 32 + f"-{buyer.id}"
        return client

    def pages() -> list[bytes]:
        visitors = [client_for(buyer), client_for(second_buyer), forged(), Client()]
        return [_no_tokens(visitor.get(PICKED).content) for visitor in visitors]

    ahead = pages()
    with override_settings(MIDDLEWARE=MIDDLEWARE_WITHOUT):
        alone = pages()
    assert ahead == alone
    mine, theirs, forger, anonymous = ahead
    assert mine != theirs
    # the held box is free for its holder only (the pages also differ by the name in the header)
    assert [_box_taken(page, 7) for page in ahead] == [False, True, True, True]
    assert forger == anonymous


def _box_taken(page: bytes, box: int) -> bool:
    button = re.search(rb'name="pick_box" value="%d".*?</button>' % box, page, re.S)
    assert button is not None
    return b"(taken)" in button.group(0)  # said of a chosen box too, which stays pressable


def test_reads_sent_together_are_served_once_each(r: redis.Redis) -> None:
    r.set("sr:test:{a}", "1")
    r.set("sr:test:{b}", "2")
    first, second = [command("GET", "sr:test:{a}")], [command("GET", "sr:test:{b}")]
    assert pipeline_replies(r, first) == ["1"]  # nothing read ahead: sent now
    with round_trips() as outside:
        read_together(r, first, second)  # outside a request: nothing to keep them for
    assert outside.count == 0
    with request_reads():  # as the middleware opens one for each request
        with round_trips() as together:
            read_together(r, first, [], second)
            assert pipeline_replies(r, second) == ["2"]
            assert pipeline_replies(r, first) == ["1"]
        with round_trips() as again:
            assert pipeline_replies(r, first) == ["1"]  # served once: asked again, sent again
    assert together.count == primaries_reached(r, ["sr:test:{a}", "sr:test:{b}"])
    assert again.count == 1


def _no_tokens(html: bytes) -> bytes:
    """The page without its CSRF tokens (masked anew on every answer)."""
    return re.sub(rb"\b[A-Za-z0-9]{64}\b", b"", html)


def _signed_in(client: redis.Redis, username: str) -> tuple[int, str]:
    """A person on `client`'s store and a session key signed in as them."""
    from accounts.selectors import person_with_password
    from accounts.sessions import SessionStore, session_sign_in
    from tests.conftest import person_make

    someone = person_make(client, username)
    found = person_with_password(client=client, person_id=someone.person.id)
    assert found is not None
    session = SessionStore()
    session_sign_in(session, person=found[0], password_hash=found[1])
    session.save()
    return someone.person.id, str(session.session_key)


def test_the_account_page_reads_its_parts_with_the_identity_on_one_server(
    one_server: redis.Redis,
) -> None:
    """On one server (as `make run`'s store) the account's fields, the bookings index and the
    waits index ride with the identity: 2 round trips with the records, the same page as
    without; a forged key naming the person reads nothing of theirs into any page."""
    person_id, key = _signed_in(one_server, "account_reader")
    req = request(cls="A", room=42, dates=(16,))
    made = booking_claim(
        client=one_server, owner_id=str(person_id), request=req, booking_id=booking_new_id(room=42)
    )
    assert made.ok and made.booking is not None

    def visitor(cookie: str) -> Client:
        client = Client()
        client.cookies[settings.SESSION_COOKIE_NAME] = cookie
        return client

    ahead, page = trips_and_page(visitor(key), "/accounts/me/")
    with override_settings(MIDDLEWARE=MIDDLEWARE_WITHOUT):
        alone, same = trips_and_page(visitor(key), "/accounts/me/")
    # without the middleware (no request span to keep reads in) each read goes on its own
    assert (ahead, alone) == (2, 5)
    assert made.booking.reference.encode() in page
    assert _no_tokens(page) == _no_tokens(same)

    forger = visitor("x" * 32 + f"-{person_id}")
    with round_trips() as trips:
        response = forger.get("/accounts/me/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert trips.count == 1  # the session, the person and the planned reads: one pipeline
