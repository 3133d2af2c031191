"""Two sign-ups of one name at the same moment: exactly one wins, every time."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
import redis
from django.conf import settings
from django.contrib.auth.hashers import make_password

from accounts.names import name_key, name_skeleton
from accounts.people import Person
from accounts.services import NameTaken, person_register
from strongroom.keyspace import (
    PERSON,
    PERSON_BY_NAME,
    PERSON_BY_SKELETON,
    PERSON_LAST_ID,
    PERSON_NAMES,
    family_of,
)
from strongroom.store import connect

ROUNDS = 20
THREADS = 8


T = TypeVar("T")


def race(attempt: Callable[[int], T], threads: int = THREADS) -> list[T | NameTaken]:
    """Run `attempt(i)` in `threads` threads released together by a barrier."""
    barrier = threading.Barrier(threads)

    def run(i: int) -> T | NameTaken:
        barrier.wait()
        try:
            return attempt(i)
        except NameTaken as taken:
            return taken

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(run, range(threads)))


def test_concurrent_signups_of_one_name_have_exactly_one_winner(r: redis.Redis):
    encoded = make_password("race-password-1")
    clients = [connect(_url(r)) for _ in range(THREADS)]
    for round_no in range(ROUNDS):
        name = f"Racer{round_no}"
        spellings = [name, name.lower(), name.upper(), f"Ｒacer{round_no}"]

        def attempt(i: int, spellings: list[str] = spellings) -> Person:
            return person_register(
                client=clients[i], username=spellings[i % len(spellings)], password_hash=encoded
            )

        results = race(attempt)
        winners = [result for result in results if not isinstance(result, NameTaken)]
        assert len(winners) == 1, (round_no, results)
        assert r.hget(PERSON_BY_NAME.key(), name_key(name)) == str(winners[0].id)
    people = [key for key in r.scan_iter(count=1000) if family_of(key) is PERSON]
    assert len(people) == ROUNDS
    assert r.hlen(PERSON_BY_NAME.key()) == r.hlen(PERSON_NAMES.key()) == ROUNDS
    # An attempt that found the name taken before writing took no id; one that got as far as
    # its own person lost the claim and its person is gone again (`people` above).
    assert ROUNDS <= int(str(r.get(PERSON_LAST_ID.key()))) <= ROUNDS * THREADS


def test_concurrent_signups_of_different_names_all_win_with_distinct_ids(r: redis.Redis):
    encoded = make_password("race-password-1")
    clients = [connect(_url(r)) for _ in range(THREADS)]
    people = race(
        lambda i: person_register(client=clients[i], username=f"solo{i}", password_hash=encoded)
    )
    ids = sorted(person.id for person in people if isinstance(person, Person))
    assert ids == list(range(1, THREADS + 1))


def naive_signup(client: redis.Redis, username: str, gate: threading.Barrier) -> bool:
    """The flaw we must not copy: check in the application, then write."""
    taken = client.hexists(PERSON_BY_NAME.key(), name_key(username))
    gate.wait()  # every thread has checked before any writes: the window made wide
    if taken:
        return False
    person_id = client.incr(PERSON_LAST_ID.key())
    client.hset(PERSON_BY_NAME.key(), name_key(username), person_id)
    return True


def test_control_the_naive_check_then_write_lets_several_win(r: redis.Redis):
    """Proves the race test can fail: the same race against read-then-write has many winners."""
    clients = [connect(_url(r)) for _ in range(THREADS)]
    gate = threading.Barrier(THREADS)
    wins = race(lambda i: naive_signup(clients[i], "Racer", gate))
    assert wins.count(True) > 1


def _url(r: redis.Redis) -> str:
    return str(settings.REDIS_URL)


def test_a_retried_signup_call_reports_its_own_success_once(r: redis.Redis):
    """redis-py may send a call twice; the second run must not create a second person."""
    from strongroom.libraries import fcall

    person = [PERSON.key(person_id=1)]
    args = ["Twice", name_key("Twice"), "hash", 0, 1, "token-a"]
    assert fcall(r, "accounts_person_create", person, args) == "ok"
    assert fcall(r, "accounts_person_create", person, args) == "ok"
    assert fcall(r, "accounts_person_create", person, [*args[:-1], "token-b"]) == "exists"
    names = [PERSON_BY_NAME.key(), PERSON_NAMES.key(), PERSON_BY_SKELETON.key()]
    twice = [name_key("Twice"), 1, "Twice", name_skeleton("Twice")]
    assert fcall(r, "accounts_name_claim", names, twice) == "ok"
    assert fcall(r, "accounts_name_claim", names, twice) == "ok"
    assert fcall(r, "accounts_name_claim", names, [*twice[:1], 2, *twice[2:]]) == "taken"
    assert r.hlen(PERSON_BY_NAME.key()) == 1


def test_a_signup_that_loses_the_name_leaves_no_person(r: redis.Redis):
    encoded = make_password("race-password-1")
    person_register(client=r, username="Only", password_hash=encoded)
    with pytest.raises(NameTaken):
        person_register(client=r, username="ONLY", password_hash=encoded)
    people = [key for key in r.scan_iter(count=1000) if family_of(key) is PERSON]
    assert people == [PERSON.key(person_id=1)]
