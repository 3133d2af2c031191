"""The known-device cookie follows the password: the browser where a person signed up, changed
their password or reset it by mail stays their known device (not held to the name's pace)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from accounts import emails
from accounts.devices import DEVICE_COOKIE
from accounts.selectors import person_id_find
from accounts.services import person_create
from tests.mail_support import with_address

T0 = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def attempt(username: str, password: str, address: str, browser: Client | None = None) -> Any:
    return (browser or Client()).post(
        "/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address
    )


def pace_then_log_in(clock: Any, username: str, password: str, browser: Client) -> int:
    """Strangers guess the name from many addresses until it is paced; at a café the browser
    mistypes three times, then logs in: the status of that login."""
    browser.post("/accounts/logout/")
    clock.shift(dt.timedelta(minutes=1))
    for n in range(5):
        for g in range(4):
            attempt(username, f"g{g}", f"203.0.113.{n + 1}")
    for _ in range(3):
        assert attempt(username, "typo", "198.51.100.9", browser).status_code in (400, 429)
    stranger = Client()
    for _ in range(3):
        attempt(username, "typo", "198.51.100.9", stranger)
    assert attempt(username, password, "198.51.100.9", stranger).status_code == 429  # control
    return int(attempt(username, password, "198.51.100.9", browser).status_code)


def test_the_browser_that_changed_the_password_stays_a_known_device(r: redis.Redis) -> None:
    person_create(client=r, username="bo", password="bo-real-pass-1")
    laptop = Client()
    with time_machine.travel(T0, tick=False) as clock:
        assert attempt("bo", "bo-real-pass-1", "192.0.2.10", laptop).status_code == 302
        changed = laptop.post(
            "/accounts/password/",
            {
                "old_password": "bo-real-pass-1",
                "new_password1": "bo-new-pass-22",
                "new_password2": "bo-new-pass-22",
            },
            REMOTE_ADDR="192.0.2.10",
        )
        assert changed.status_code == 302
        assert changed.cookies[DEVICE_COOKIE].value  # noted again, under the new password
        assert pace_then_log_in(clock, "bo", "bo-new-pass-22", laptop) == 302


def test_the_browser_that_reset_the_password_by_mail_is_a_known_device(r: redis.Redis) -> None:
    person = person_create(client=r, username="bo", password="bo-real-pass-1")
    with_address(r, person, "bo@example.org")
    phone = Client()
    with time_machine.travel(T0, tick=False) as clock:
        token = emails.reset_token_make(client=r, person_id=person.id)
        reset = phone.post(
            f"/accounts/password/reset/{person.id}/{token}/",
            {"new_password1": "bo-new-pass-22", "new_password2": "bo-new-pass-22"},
            REMOTE_ADDR="192.0.2.11",
        )
        assert reset.status_code == 302 and reset.cookies[DEVICE_COOKIE].value
        assert pace_then_log_in(clock, "bo", "bo-new-pass-22", phone) == 302


def test_the_browser_that_signed_up_is_a_known_device(r: redis.Redis) -> None:
    browser = Client()
    with time_machine.travel(T0, tick=False) as clock:
        signed_up = browser.post(
            "/accounts/signup/",
            {"username": "newbo", "password1": "Newbo-pass-77", "password2": "Newbo-pass-77"},
            REMOTE_ADDR="192.0.2.12",
        )
        assert signed_up.status_code == 302 and signed_up.cookies[DEVICE_COOKIE].value
        assert person_id_find(client=r, username="newbo") is not None
        assert pace_then_log_in(clock, "newbo", "Newbo-pass-77", browser) == 302
