"""The name's pace against guessing spread over many addresses: strangers never keep out a
person who mistyped once or twice, nor a browser where that person has logged in before (its
known-device cookie); clients with several failures of the name wait their turn."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from accounts.devices import DEVICE_COOKIE
from accounts.gates import password_check
from accounts.services import password_set, person_create
from tests.mail_support import with_address
from tests.store_support import commands_run

T0 = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)
YOUR_CONNECTION = "from your connection"
GUESSED = "being guessed from many places"
PACED = (
    "This username is being guessed from many places, and this connection has had several "
    "wrong passwords for it, so it waits its turn. Please try again in 1 minute, or log in "
    "from a browser where you have logged in before. If your account has a confirmed email "
    "address, you can also reset your password by mail to sign in now."
)


@pytest.fixture(autouse=True)
def fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def attempt(username: str, password: str, address: str, client: Client | None = None) -> Any:
    browser = client or Client()
    return browser.post(
        "/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address
    )


def status(username: str, password: str, address: str) -> int:
    return int(attempt(username, password, address).status_code)


def test_strangers_guessing_from_many_addresses_never_keep_out_a_buyer_who_mistyped(
    r: redis.Redis,
) -> None:
    person_create(client=r, username="bo", password="bo-real-pass-1")
    with time_machine.travel(T0, tick=False) as clock:
        for n in range(20):  # twenty addresses, six wrong passwords each
            statuses = [status("bo", f"guess-{g}", f"203.0.113.{n + 1}") for g in range(6)]
            assert statuses[:3] == [400, 400, 400] and statuses[-1] == 429, statuses
        mistyped = attempt("bo", "bo-real-pass-l", "127.0.0.5")
        assert mistyped.status_code == 400
        assert YOUR_CONNECTION not in mistyped.content.decode()
        assert "The username or the password is wrong." in mistyped.content.decode()
        for fresh in range(15):  # a guess every 2 s, each from a new address
            clock.shift(dt.timedelta(seconds=2))
            assert status("bo", "guess-x", f"198.51.100.{fresh}") == 400
            if fresh == 5:
                assert status("bo", "bo-real-pass-I", "127.0.0.5") == 400  # a second typo
        assert status("bo", "bo-real-pass-1", "127.0.0.5") == 302


def test_a_client_with_several_failures_of_a_guessed_name_waits_its_turn(r: redis.Redis) -> None:
    """Brute force stays bounded: past two failures, an address waits for the name's pace (one
    try a minute among all of them) and is locked at five."""
    person_create(client=r, username="bo", password="bo-real-pass-1")
    with time_machine.travel(T0, tick=False) as clock:
        outcomes = [
            [status("bo", f"g{g}", f"203.0.113.{n + 1}") for g in range(4)] for n in range(5)
        ]
        # Three free tries each; the name reaches ten failures during the third address, whose
        # fourth try (paced) starts the pace: the later addresses' fourth tries wait.
        assert outcomes[:3] == [[400] * 4] * 3, outcomes
        assert outcomes[3:] == [[400, 400, 400, 429]] * 2, outcomes
        paced = attempt("bo", "bo-real-pass-1", "203.0.113.4")
        assert paced.status_code == 429 and int(paced["Retry-After"]) == 60
        page = paced.content.decode()
        assert PACED in page  # bo has no confirmed address: the page says the same
        clock.shift(dt.timedelta(seconds=61))
        assert status("bo", "g9", "203.0.113.4") == 400  # the minute's one try
        assert status("bo", "g9", "203.0.113.5") == 429  # and only one
        clock.shift(dt.timedelta(seconds=61))
        assert status("bo", "g9", "203.0.113.5") == 400
        clock.shift(dt.timedelta(seconds=61))
        locked = attempt("bo", "g10", "203.0.113.5")  # its fifth failure: its own lock
        assert locked.status_code == 429 and YOUR_CONNECTION in locked.content.decode()
        assert status("bo", "bo-real-pass-1", "203.0.113.5") == 429


@pytest.mark.parametrize("name", ["bo", "cy", "nobody"])
def test_the_paced_page_says_the_same_whether_the_name_exists_or_has_mail(
    r: redis.Redis, name: str
) -> None:
    person = person_create(client=r, username="bo", password="bo-real-pass-1")
    with_address(r, person, "bo@example.org")
    person_create(client=r, username="cy", password="cy-real-pass-1")  # no address
    with time_machine.travel(T0, tick=False):
        for n in range(4):
            [status(name, f"g{g}", f"203.0.113.{n + 1}") for g in range(4)]
        page = attempt(name, "some-pass-1", "203.0.113.1")
    # Its turn comes after the one kept for the fourth address (told to come back first).
    assert page.status_code == 429
    assert PACED.replace("in 1 minute", "in 2 minutes") in page.content.decode()


def _calls(r: redis.Redis) -> dict[str, int]:
    return dict(commands_run(r))  # every primary's: on a cluster the two people's keys differ


def test_a_refused_attempt_reads_the_same_for_a_name_that_exists_and_one_that_does_not(
    r: redis.Redis, settings: Any
) -> None:
    """The client's own lock refuses both; the store sees the same commands either way."""
    settings.STRONGROOM_LOGIN_CLIENT_LIMIT = 3
    person_create(client=r, username="bo", password="bo-real-pass-1")
    asked: list[int] = []

    def device(person_id: int, password_hash: str) -> bool:
        asked.append(person_id)
        return False

    with time_machine.travel(T0, tick=False):
        for name in ("x1", "x2", "x3"):
            password_check(client=r, username=name, password="g", client_id="203.0.113.9")
        sent = []
        for name in ("bo", "nobody"):
            before = _calls(r)
            outcome = password_check(
                client=r, username=name, password="g", client_id="203.0.113.9", device=device
            )
            after = _calls(r)
            assert outcome.locked and outcome.address_locked
            sent.append({k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k)})
    assert sent[0] == sent[1], sent
    assert len(asked) == 2


def test_a_browser_where_the_person_logged_in_is_not_held_to_the_names_pace(
    r: redis.Redis,
) -> None:
    person = person_create(client=r, username="bo", password="bo-real-pass-1")
    laptop, other = Client(), Client()
    with time_machine.travel(T0, tick=False) as clock:
        assert attempt("bo", "bo-real-pass-1", "192.0.2.10", laptop).status_code == 302
        assert DEVICE_COOKIE in laptop.cookies and laptop.cookies[DEVICE_COOKIE]["httponly"]
        laptop.post("/accounts/logout/")
        clock.shift(dt.timedelta(minutes=1))
        for n in range(5):  # the name is guessed and paced
            [status("bo", f"g{g}", f"203.0.113.{n + 1}") for g in range(4)]
        # At a café (a new address), the laptop and another browser mistype three times each.
        for browser in (laptop, other):
            for _ in range(3):
                assert attempt("bo", "typo", "198.51.100.9", browser).status_code in (400, 429)
        assert attempt("bo", "bo-real-pass-1", "198.51.100.9", other).status_code == 429
        assert attempt("bo", "bo-real-pass-1", "198.51.100.9", laptop).status_code == 302
        # A new password makes the old note worthless (at yet another address).
        laptop.post("/accounts/logout/")
        password_set(client=r, person_id=person.id, password="bo-new-pass-2")
        for _ in range(3):
            assert attempt("bo", "typo", "198.51.100.10", laptop).status_code == 400
        assert attempt("bo", "bo-new-pass-2", "198.51.100.10", laptop).status_code == 429


def test_a_connection_told_to_come_back_finds_its_turn_kept_from_strangers_polling(
    r: redis.Redis,
) -> None:
    """The owner, paced after three mistypes of their own, comes back when told: the turn is
    theirs, though strangers at the name poll every few seconds from addresses of their own
    (each of which gets one turn, in the order they were told)."""
    person_create(client=r, username="bo", password="bo-real-pass-1")
    strangers = [f"203.0.113.{n + 1}" for n in range(4)]
    with time_machine.travel(T0, tick=False) as clock:
        for address in strangers:  # the name under attack: each stranger paced
            [status("bo", f"g{g}", address) for g in range(4)]
        for g in range(3):  # the owner mistypes three times from a new address
            status("bo", f"bo-real-pass-{g + 2}", "198.51.100.9")
        told = attempt("bo", "bo-real-pass-1", "198.51.100.9")
        assert told.status_code == 429
        wait = int(told["Retry-After"])
        # The strangers poll every 5 s until then: never the owner's turn, at most their own.
        let_in = 0
        for _ in range(wait // 5):
            clock.shift(dt.timedelta(seconds=5))
            let_in += sum(status("bo", "g-poll", address) != 429 for address in strangers)
        clock.shift(dt.timedelta(seconds=wait % 5 + 1))
        came_back = attempt("bo", "bo-real-pass-1", "198.51.100.9")
    assert came_back.status_code == 302, came_back.content.decode()
    assert let_in <= len(strangers)
