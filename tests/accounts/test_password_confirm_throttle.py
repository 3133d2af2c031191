"""A signed-in person's password, asked again to change it or to delete the account, is checked
under the login throttle; the throttle's refusals say whose lock it is and when to come back;
a sign-up of a name already taken neither counts against the sign-up allowance nor writes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import redis
import time_machine
from django.test import Client

from accounts.selectors import person_find
from strongroom.keyspace import PERSON_LAST_ID
from tests.conftest import Someone

T0 = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)
PAIR_LOCKED = "Too many failed logins for this username from your connection."
ADDRESS_LOCKED = "Too many failed logins from your connection."
CHECK_PAUSED = "Too many wrong passwords were typed here, so the password check is paused."
NEW_PASSWORD = "a-new-Password-9x"


def _change(client: Client, old: str) -> Any:
    return client.post(
        "/accounts/password/",
        {"old_password": old, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )


def _login(username: str, password: str, ip: str = "198.51.100.9") -> int:
    answer = Client(REMOTE_ADDR=ip).post(
        "/accounts/login/", {"username": username, "password": password}
    )
    return int(answer.status_code)


def test_guessing_the_current_password_to_change_it_is_locked_like_a_login(
    buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(buyer)
    with time_machine.travel(T0, tick=False):
        assert [_change(client, f"guess-{n}").status_code for n in range(4)] == [400] * 4
        locked = _change(client, "guess-5")
        assert locked.status_code == 429
        # About the password check, not about logins from a connection.
        assert CHECK_PAUSED in locked.content.decode() and "15 minutes" in locked.content.decode()
        assert "failed logins" not in locked.content.decode()
        assert locked["Retry-After"] == str(15 * 60)
        # Locked: the right password does not get through either, and nothing changes.
        right = _change(client, buyer.password)
        assert right.status_code == 429
        assert _login(buyer.username, buyer.password) == 302
        assert _login(buyer.username, NEW_PASSWORD, ip="198.51.100.10") == 400


def test_the_right_password_changes_it_and_clears_the_guesses(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(buyer)
    with time_machine.travel(T0, tick=False):
        assert [_change(client, f"guess-{n}").status_code for n in range(4)] == [400] * 4
        assert _change(client, buyer.password).status_code == 302
        assert _login(buyer.username, NEW_PASSWORD) == 302


def test_guessing_the_password_to_delete_the_account_is_locked_like_a_login(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(buyer)
    with time_machine.travel(T0, tick=False):
        answers = [
            client.post("/accounts/me/delete/", {"password": f"guess-{n}"}).status_code
            for n in range(6)
        ]
        assert answers == [400, 400, 400, 400, 429, 429]
        right = client.post("/accounts/me/delete/", {"password": buyer.password})
        assert right.status_code == 429 and CHECK_PAUSED in right.content.decode()
        assert "Retry-After" in right
    assert person_find(client=r, username=buyer.username) is not None


def test_a_connection_locked_for_every_name_is_told_so_with_when_to_come_back(
    buyer: Someone, settings: Any
) -> None:
    settings.STRONGROOM_LOGIN_CLIENT_LIMIT = 6
    with time_machine.travel(T0, tick=False):
        for n in range(6):  # one failure each for six names: no pair is locked
            assert _login(f"someone-{n}", "wrong-password", ip="203.0.113.50") == 400
        answer = Client(REMOTE_ADDR="203.0.113.50").post(
            "/accounts/login/", {"username": buyer.username, "password": buyer.password}
        )
    page = answer.content.decode()
    assert answer.status_code == 429
    assert ADDRESS_LOCKED in page and PAIR_LOCKED not in page
    assert answer["Retry-After"] == str(15 * 60)


def test_a_taken_name_neither_counts_against_the_sign_up_allowance_nor_writes(
    r: redis.Redis, buyer: Someone, settings: Any
) -> None:
    settings.STRONGROOM_SIGNUP_LIMIT = 2
    client = Client(REMOTE_ADDR="203.0.113.60")
    last_id = r.get(PERSON_LAST_ID.key())
    form = {"password1": "Signup-pass-77x", "password2": "Signup-pass-77x"}
    for taken in (buyer.username, buyer.username.upper(), "Ｂuyer_Anna", "Buyer_Аnna"):
        answer = client.post("/accounts/signup/", {**form, "username": taken})
        assert answer.status_code == 400
        assert "taken" in answer.content.decode()
    assert r.get(PERSON_LAST_ID.key()) == last_id  # no id used, no person written
    for name in ("new.one", "new.two"):  # the allowance of 2 is whole
        fresh = Client(REMOTE_ADDR="203.0.113.60")
        assert fresh.post("/accounts/signup/", {**form, "username": name}).status_code == 302
    third = Client(REMOTE_ADDR="203.0.113.60").post(
        "/accounts/signup/", {**form, "username": "new.three"}
    )
    assert third.status_code == 429
    assert int(third["Retry-After"]) > 0
