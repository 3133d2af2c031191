"""The login throttle: 5 failures in 15 minutes lock a (username, client) pair for 15 minutes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from accounts.selectors import login_summary
from accounts.services import person_create
from accounts.throttle import ThrottlePair
from strongroom.keyspace import LOGIN_FAILURES, LOGIN_LOCK, family_of

T0 = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)
LOCKED = "Too many failed logins for this username from your connection."


@pytest.fixture(autouse=True)
def fast_hashing(settings) -> None:
    """Dozens of password checks here: a fast hasher keeps the module quick (Django's advice)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


class Someone:
    def __init__(self, person, password: str) -> None:
        self.id, self.username, self.password = person.id, person.username, password


@pytest.fixture
def buyer(r: redis.Redis) -> Someone:
    password = "throttle-test-pass-1"
    return Someone(person_create(client=r, username="Tess", password=password), password)


@pytest.fixture
def second_buyer(r: redis.Redis) -> Someone:
    password = "throttle-test-pass-2"
    return Someone(person_create(client=r, username="Theo", password=password), password)


def attempt(username: str, password: str, *, ip: str = "203.0.113.7"):
    return Client(REMOTE_ADDR=ip).post(
        "/accounts/login/", {"username": username, "password": password}
    )


def fail(username: str, times: int, **kwargs) -> list[int]:
    return [attempt(username, "wrong-password", **kwargs).status_code for _ in range(times)]


def test_five_failures_lock_the_pair_even_for_the_right_password(r: redis.Redis, buyer):
    with time_machine.travel(T0, tick=False):
        assert fail(buyer.username, 4) == [400] * 4
        locked = attempt(buyer.username, "wrong-password")
        assert locked.status_code == 429
        assert LOCKED in locked.content.decode()
        assert "15 minutes" in locked.content.decode()
        right = attempt(buyer.username, buyer.password)
        assert right.status_code == 429
        assert LOCKED in right.content.decode()
    summary = login_summary(client=r, person_id=buyer.id)
    assert summary is not None and summary.logins == 0


def test_an_unknown_name_locks_the_same_way_so_the_lock_reveals_nothing(r: redis.Redis, buyer):
    with time_machine.travel(T0, tick=False):
        known = fail(buyer.username, 6)
        unknown = fail("no-such-person", 6)
    assert known == unknown == [400, 400, 400, 400, 429, 429]


def test_the_lock_is_per_pair(buyer, second_buyer):
    with time_machine.travel(T0, tick=False):
        fail(buyer.username, 5)
        assert attempt(buyer.username, buyer.password, ip="198.51.100.1").status_code == 302
        assert attempt(second_buyer.username, second_buyer.password).status_code == 302
        assert attempt(buyer.username.upper(), buyer.password).status_code == 429


def test_an_ipv6_host_is_its_64_network_and_cannot_step_around_the_lock(buyer):
    """An IPv6 host is given a /64 and may use any address in it: each new address is not a
    new client, or five guesses from each would never lock the pair."""
    with time_machine.travel(T0, tick=False):
        answers = [
            attempt(buyer.username, "wrong-password", ip=f"2001:db8:7:1::{n:x}").status_code
            for n in range(1, 7)
        ]
        assert answers == [400, 400, 400, 400, 429, 429]
        assert attempt(buyer.username, buyer.password, ip="2001:db8:7:1::99").status_code == 429
        # Another network (and an IPv4 address written as IPv6, which is that IPv4 client)
        assert attempt(buyer.username, buyer.password, ip="2001:db8:7:2::1").status_code == 302
    with time_machine.travel(T0, tick=False):
        fail(buyer.username, 5, ip="198.51.100.77")
        mapped = attempt(buyer.username, buyer.password, ip="::ffff:198.51.100.77")
        assert mapped.status_code == 429


def test_a_name_guessed_from_many_addresses_says_why_a_connection_waits(buyer):
    with time_machine.travel(T0, tick=False):
        for n in range(4):  # sixteen failures of the name, from four addresses
            assert fail(buyer.username, 4, ip=f"203.0.113.{40 + n}")[:3] == [400] * 3
        # A connection with three failures of the name waits for its turn: the one after the
        # turn kept for the last address told to come back (its fourth try, paced).
        assert fail(buyer.username, 3, ip="198.51.100.140") == [400] * 3
        page = attempt(buyer.username, buyer.password, ip="198.51.100.140")
        assert page.status_code == 429 and int(page["Retry-After"]) == 120
        assert "being guessed from many places" in page.content.decode()
        # The same words whether or not the name's person has a confirmed address.
        assert "If your account has a confirmed email address" in page.content.decode()


def test_the_lock_expires_after_15_minutes(r: redis.Redis, buyer):
    with time_machine.travel(T0, tick=False) as clock:
        fail(buyer.username, 5)
        clock.shift(dt.timedelta(minutes=14, seconds=59))
        late = attempt(buyer.username, buyer.password)
        assert late.status_code == 429
        assert "1 minute." in late.content.decode()
        clock.shift(dt.timedelta(seconds=1))
        assert attempt(buyer.username, buyer.password).status_code == 302
    summary = login_summary(client=r, person_id=buyer.id)
    assert summary is not None and summary.logins == 1


def test_failures_older_than_the_window_do_not_count(buyer):
    with time_machine.travel(T0, tick=False) as clock:
        fail(buyer.username, 4)
        clock.shift(dt.timedelta(minutes=15, seconds=1))
        assert fail(buyer.username, 4) == [400] * 4
        assert attempt(buyer.username, buyer.password).status_code == 302


def test_a_successful_login_clears_the_failures(r: redis.Redis, buyer):
    with time_machine.travel(T0, tick=False):
        fail(buyer.username, 4)
        assert attempt(buyer.username, buyer.password).status_code == 302
        assert fail(buyer.username, 4) == [400] * 4
    pair = ThrottlePair.of(username=buyer.username, client_id="203.0.113.7")
    assert r.zcard(pair.failures_key) == 4


def test_throttle_keys_hold_no_name_or_address_and_expire(r: redis.Redis, buyer):
    fail(buyer.username, 5)
    keys = list(r.scan_iter(count=1000))
    throttle = [key for key in keys if family_of(key) in (LOGIN_FAILURES, LOGIN_LOCK)]
    assert throttle
    for key in throttle:
        assert buyer.username.lower() not in key.lower() and "203.0.113.7" not in key
        assert 0 < r.pttl(key) <= 15 * 60_000


def test_an_unknown_name_costs_the_same_round_trips_as_a_wrong_password(r: redis.Redis, buyer):
    """A name that exists must not be told apart by how long a failed login takes."""
    from accounts.services import login_attempt
    from strongroom.store import round_trips

    costs = []
    for name in (buyer.username, "nobody-by-this-name"):
        with round_trips() as trips:
            outcome = login_attempt(
                client=r, username=name, password="wrong-password", client_id="198.51.100.7"
            )
        assert outcome.person is None and not outcome.locked
        costs.append(trips.count)
    assert costs[0] == costs[1]


def test_the_throttle_counts_case_and_width_variants_of_a_name_as_one(buyer):
    client = Client(REMOTE_ADDR="198.51.100.8")
    for name in ("Tess", "TESS", "ｔｅｓｓ", "tEsS", "Ｔｅｓｓ"):
        client.post("/accounts/login/", {"username": name, "password": "wrong"})
    page = client.post("/accounts/login/", {"username": "tess", "password": buyer.password})
    assert page.status_code == 429
    assert LOCKED in page.content.decode()


def test_behind_the_proxy_one_client_cannot_lock_a_name_for_everyone(buyer, settings):
    """Every request arrives from the proxy's address; the client is the entry it appended."""
    settings.STRONGROOM_CLIENT_FROM_FORWARDED_FOR = True
    proxy: dict[str, Any] = {"REMOTE_ADDR": "127.0.0.1"}
    attacker = Client(**proxy, HTTP_X_FORWARDED_FOR="203.0.113.66")
    for fake in ("198.51.100.1", "198.51.100.2", "", "x", "198.51.100.3", "198.51.100.4"):
        # The client's own claims come first; the proxy's entry is the last one.
        attacker.defaults["HTTP_X_FORWARDED_FOR"] = f"{fake}, 203.0.113.66"
        attacker.post("/accounts/login/", {"username": buyer.username, "password": "wrong"})
    assert (
        LOCKED
        in attacker.post(
            "/accounts/login/", {"username": buyer.username, "password": buyer.password}
        ).content.decode()
    )
    victim = Client(**proxy, HTTP_X_FORWARDED_FOR="198.51.100.20")
    page = victim.post("/accounts/login/", {"username": buyer.username, "password": buyer.password})
    assert page.status_code == 302
