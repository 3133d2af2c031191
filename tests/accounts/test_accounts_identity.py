"""The request's identity in one round trip: a signed-in session's key names its person, so the
session and the person are read in one pipeline; the name in the key is only a hint."""

from __future__ import annotations

import redis
from django.conf import settings
from django.contrib.sessions.backends.base import VALID_KEY_CHARS
from django.test import Client
from django.utils.crypto import get_random_string

from accounts.selectors import person_with_password
from accounts.sessions import (
    SESSION_PERSON_ID,
    SessionStore,
    session_key_person_id,
    session_sign_in,
)
from strongroom.store import round_trips
from tests.conftest import Someone
from tests.store_support import identity_trips


def _login(client: Client, someone: Someone) -> None:
    answer = client.post(
        "/accounts/login/", {"username": someone.username, "password": someone.password}
    )
    assert answer.status_code == 302


def _session_key(client: Client) -> str:
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def test_a_signed_in_page_reads_session_and_person_in_one_round_trip(r: redis.Redis, buyer):
    client = Client()
    _login(client, buyer)
    assert session_key_person_id(_session_key(client)) == buyer.id
    with round_trips() as trips:
        page = client.get("/")
    assert buyer.username in page.content.decode()
    # One pipeline: one round trip on one server, one per primary it reaches on a cluster.
    assert trips.count == identity_trips(r, client)


def test_a_key_naming_someone_else_signs_no_one_in(r: redis.Redis, buyer, staff):
    """A forged cookie naming staff reads their record along, but the session decides."""
    client = Client()
    _login(client, buyer)
    forged = _session_key(client).rsplit("-", 1)[0] + f"-{staff.id}"
    client.cookies[settings.SESSION_COOKIE_NAME] = forged
    assert client.get("/staff/").status_code == 302  # to the login page: anonymous
    stranger = Client()
    stranger.cookies[settings.SESSION_COOKIE_NAME] = get_random_string(32) + f"-{staff.id}"
    assert stranger.get("/staff/").status_code == 302


def test_a_session_whose_key_names_no_one_still_finds_its_person(r: redis.Redis, buyer):
    """Sessions made before keys named their person: two round trips, the same person."""
    found = person_with_password(client=r, person_id=buyer.id)
    assert found is not None
    session = SessionStore()
    session_sign_in(session, person=found[0], password_hash=found[1])
    session._session_key = get_random_string(32, VALID_KEY_CHARS)  # an old-style key
    session.save(must_create=True)
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = session.session_key or ""
    with round_trips() as trips:
        page = client.get("/")
    assert buyer.username in page.content.decode()
    assert trips.count == 2


def test_signing_out_leaves_a_key_that_names_no_one(r: redis.Redis, buyer):
    client = Client()
    _login(client, buyer)
    client.post("/accounts/logout/")
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert key == "" or session_key_person_id(key) is None
    assert SESSION_PERSON_ID not in SessionStore(session_key=key or None).load()
