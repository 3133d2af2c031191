"""Strangers cannot make the site hash at will, nor queue a buyer's password behind theirs
(strongroom/offload.py): an unknown name is not hashed, a stranger's password goes to the open
lane, which refuses work at once when full ("try again in a few seconds", nothing counted), and
a pair (name, connection) where the person logged in before is checked whatever the lane."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.test import Client

from accounts import gates
from accounts.services import person_create
from accounts.throttle import ThrottlePair
from strongroom import offload
from strongroom.keyspace import PERSON_BY_NAME

BUSY = "Too many passwords are being checked at this moment"
WRONG = "The username or the password is wrong."


@pytest.fixture(autouse=True)
def fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The open_lane flag of every password check of the login gate, in order."""
    seen: list[bool] = []
    real = gates.off_loop

    def counted(work: Any, *args: Any, open_lane: bool = False, share: str = "") -> Any:
        seen.append(open_lane)
        return real(work, *args, open_lane=open_lane, share=share)

    monkeypatch.setattr(gates, "off_loop", counted)
    return seen


def log_in(username: str, password: str, address: str, client: Client | None = None) -> Any:
    return (client or Client()).post(
        "/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address
    )


def counted(r: redis.Redis, username: str, address: str) -> int:
    """The failures counted for the pair, the address and the name together."""
    keys = ThrottlePair.of(username=username, client_id=address).gate_keys
    return sum(r.zcard(keys[name]) for name in ("pair", "address", "name"))


def test_an_unknown_name_costs_no_hash_and_a_strangers_guess_goes_to_the_open_lane(
    r: redis.Redis, hashes: list[bool]
) -> None:
    person_create(client=r, username="bo", password="bo-real-pass-1")
    unknown = log_in("nobody-here", "whatever-1", "203.0.113.7")
    assert unknown.status_code == 400 and WRONG in unknown.content.decode()
    assert hashes == []  # the same answer, without the 0.4 s of a hash
    assert counted(r, "nobody-here", "203.0.113.7") == 3  # still counted, as a wrong password
    wrong = log_in("bo", "bo-guess-1", "203.0.113.8")
    assert wrong.status_code == 400 and WRONG in wrong.content.decode()
    assert hashes == [True]


def test_a_full_open_lane_refuses_a_strangers_password_at_once_and_counts_nothing(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch, hashes: list[bool]
) -> None:
    person_create(client=r, username="bo", password="bo-real-pass-1")
    monkeypatch.setattr(offload, "OPEN_LANE_LIMIT", 0)
    for _ in range(8):  # more than the pair's limit of failures: none of them is counted
        busy = log_in("bo", "bo-real-pass-1", "203.0.113.9")
        assert busy.status_code == 503 and BUSY in busy.content.decode()
        assert busy["Retry-After"] == str(gates.BUSY_RETRY_S)
    assert hashes == [True] * 8
    assert counted(r, "bo", "203.0.113.9") == 0
    monkeypatch.setattr(offload, "OPEN_LANE_LIMIT", 6)
    assert log_in("bo", "bo-real-pass-1", "203.0.113.9").status_code == 302


def test_a_pair_where_the_person_logged_in_before_is_checked_when_the_lane_is_full(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch, hashes: list[bool]
) -> None:
    person_create(client=r, username="bo", password="bo-real-pass-1")
    assert log_in("bo", "bo-real-pass-1", "198.51.100.4").status_code == 302
    monkeypatch.setattr(offload, "OPEN_LANE_LIMIT", 0)
    again = log_in("bo", "bo-real-pass-1", "198.51.100.4")
    assert again.status_code == 302
    assert hashes == [True, False]  # the second on the known pair's own thread
    # A stranger at another connection meanwhile is refused, not queued.
    assert log_in("bo", "bo-guess-2", "198.51.100.5").status_code == 503


def test_a_sign_up_when_the_open_lane_is_full_is_refused_and_makes_no_account(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offload, "OPEN_LANE_LIMIT", 0)
    form = {"username": "newcomer", "password1": "a-long-pass-77", "password2": "a-long-pass-77"}
    answer = Client().post("/accounts/signup/", form, REMOTE_ADDR="192.0.2.44")
    assert answer.status_code == 503
    assert "so your account was not made yet" in answer.content.decode()
    assert answer["Retry-After"] == str(gates.BUSY_RETRY_S)
    assert r.hget(PERSON_BY_NAME.key(), "newcomer") is None
    chinese = Client().post(
        "/accounts/signup/", form, REMOTE_ADDR="192.0.2.45", HTTP_ACCEPT_LANGUAGE="zh-hans"
    )
    assert "您的账户尚未创建" in chinese.content.decode()


def test_a_browser_where_the_person_logged_in_is_checked_from_a_new_address_when_full(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch, hashes: list[bool]
) -> None:
    """The browser's known-device note (set at the login) counts as much as the pair: a phone
    that moved to another network is not a stranger."""
    person_create(client=r, username="bo", password="bo-real-pass-1")
    browser = Client()
    assert log_in("bo", "bo-real-pass-1", "198.51.100.4", browser).status_code == 302
    browser.post("/accounts/logout/")
    monkeypatch.setattr(offload, "OPEN_LANE_LIMIT", 0)
    elsewhere = log_in("bo", "bo-real-pass-1", "203.0.113.77", browser)
    assert elsewhere.status_code == 302
    assert hashes == [True, False]
    assert log_in("bo", "bo-real-pass-1", "203.0.113.78").status_code == 503  # no note: full
