"""A name whose confusable skeleton (Unicode TR39) equals a taken one is refused, atomically with
the claim of the name itself (issue 33, point 9)."""

from __future__ import annotations

import threading

import pytest
import redis
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from accounts.names import name_skeleton
from accounts.services import NameTaken, person_delete, person_register
from strongroom.keyspace import PERSON, PERSON_BY_NAME, PERSON_BY_SKELETON
from strongroom.store import connect

CYRILLIC_ANNA = "\u0430nna"  # CYRILLIC SMALL LETTER A, then "nna"


def register(client: redis.Redis, username: str) -> object:
    return person_register(client=client, username=username, password_hash="x")


@pytest.mark.parametrize(
    ("taken", "lookalike"),
    [("anna", CYRILLIC_ANNA), ("Anna", CYRILLIC_ANNA.upper()), ("paypal", "paypa1"),
     ("money", "rnoney"), ("bob", "\uff42ob"), ("curator", "curat0r"), ("curator", "cu_rator"),
     ("curator", "Curator."), ("curator", "cura\u0442or")],
)  # fmt: skip
def test_a_name_that_looks_like_a_taken_one_is_refused(
    r: redis.Redis, taken: str, lookalike: str
) -> None:
    register(r, taken)
    with pytest.raises(NameTaken):
        register(r, lookalike)
    assert r.hlen(PERSON_BY_NAME.key()) == 1


def test_names_that_only_share_letters_stay_apart(r: redis.Redis) -> None:
    for username in ("anna", "anne", "élan", "elan", "中文", "bo"):
        register(r, username)
    assert r.hlen(PERSON_BY_NAME.key()) == 6


def test_the_sign_up_page_says_why_a_lookalike_is_refused_and_writes_nothing(
    r: redis.Redis,
) -> None:
    register(r, "anna")
    before = r.dbsize()
    form = {"username": CYRILLIC_ANNA, "password1": "Lo0kalike-pass", "password2": "Lo0kalike-pass"}
    page = Client().post("/accounts/signup/", form)
    assert page.status_code == 400
    assert "looks like one already taken" in page.content.decode()
    assert r.hlen(PERSON_BY_NAME.key()) == 1
    assert r.dbsize() <= before + 1  # at most the sign-up throttle's counter


def test_parallel_sign_ups_of_lookalike_names_have_one_winner(r: redis.Redis) -> None:
    spellings = ["anna", CYRILLIC_ANNA, "ANNA", "\u0430nn\u0430", "\u0410NN\u0410"]
    clients = [connect(str(settings.REDIS_URL)) for _ in spellings]
    for round_no in range(5):
        r.flushall()
        barrier = threading.Barrier(len(spellings))
        outcomes: list[str] = []

        def attempt(
            i: int, outcomes: list[str] = outcomes, barrier: threading.Barrier = barrier
        ) -> None:
            barrier.wait()
            try:
                register(clients[i], spellings[i])
                outcomes.append("won")
            except NameTaken:
                outcomes.append("refused")

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(len(spellings))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert outcomes.count("won") == 1, (round_no, outcomes)
        assert r.hlen(PERSON_BY_NAME.key()) == r.hlen(PERSON_BY_SKELETON.key()) == 1


def test_a_deleted_name_frees_its_lookalikes(r: redis.Redis) -> None:
    anna = register(r, "anna")
    assert person_delete(client=r, person_id=anna.id)  # type: ignore[attr-defined]
    register(r, CYRILLIC_ANNA)
    assert r.hget(PERSON_BY_SKELETON.key(), name_skeleton("anna")) is not None


def test_names_claimed_before_the_check_are_protected_once_filled(
    r: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    register(r, "anna")
    r.delete(PERSON_BY_SKELETON.key())  # as a store written by an earlier version
    call_command("lookalikes")
    with pytest.raises(NameTaken):
        register(r, CYRILLIC_ANNA)


def test_forgetting_a_name_leaves_another_persons_lookalike_entry(r: redis.Redis) -> None:
    """Two names claimed before their skeletons matched (the skeleton grew since): forgetting
    one does not free the other's, or its lookalike could be taken next."""
    first = register(r, "curator")
    r.hset(PERSON_BY_NAME.key(), "cu_rator", "999")  # an old claim, as an older site made it
    r.hset(PERSON.key(person_id=999), "name_key", "cu_rator")
    assert person_delete(client=r, person_id=999)
    assert r.hget(PERSON_BY_SKELETON.key(), "curator") == str(first.id)  # type: ignore[attr-defined]
    with pytest.raises(NameTaken):
        register(r, "curat0r")
