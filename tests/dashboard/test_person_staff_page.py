"""Granting and revoking staff (/staff/people/<id>/staff/): a press that would change nothing
says so, in the staff member's language, and writes nothing: no flag, no audit entry."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
import redis
from django.test import Client

from accounts.services import staff_set
from dashboard.services import staff_grant_set
from strongroom.keyspace import PERSON, STAFF_AUDIT
from tests.conftest import Someone, person_make


def _pressed(client: Client, person_id: int, is_staff: str, language: str = "en") -> str:
    """The person page after one press (the message is written in the language of the press)."""
    answer = client.post(
        f"/staff/people/{person_id}/staff/", {"is_staff": is_staff}, HTTP_ACCEPT_LANGUAGE=language
    )
    assert answer.status_code == 302
    return client.get(answer["Location"], HTTP_ACCEPT_LANGUAGE=language).content.decode()


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", "Nothing changed: Buyer_Anna is not staff."),
        ("zh-hans", "未作更改：Buyer_Anna 不是工作人员。"),
    ],
)
def test_revoking_staff_from_someone_who_is_not_staff_writes_nothing_and_says_so(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
    language: str,
    words: str,
) -> None:
    client = client_for(staff)
    person_before = r.hgetall(PERSON.key(person_id=buyer.id))
    for _press in range(2):
        page = _pressed(client, buyer.id, "0", language)
        assert words in page
        assert "no longer staff" not in page and "不再是工作人员" not in page
    assert r.hgetall(PERSON.key(person_id=buyer.id)) == person_before
    assert r.xlen(STAFF_AUDIT.key()) == 0


def test_granting_staff_to_someone_who_is_staff_writes_nothing_and_says_so(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    colleague = person_make(r, "Keeper_Li", is_staff=True)
    client = client_for(staff)
    said = _pressed(client, colleague.id, "1")
    assert "Nothing changed: Keeper_Li is already staff." in said
    assert "未作更改：Keeper_Li 已经是工作人员。" in _pressed(client, colleague.id, "1", "zh-hans")
    assert r.xlen(STAFF_AUDIT.key()) == 0


def test_a_real_change_is_still_said_and_audited_once(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    assert "Buyer_Anna is now staff." in _pressed(client, buyer.id, "1")
    assert "Buyer_Anna is no longer staff." in _pressed(client, buyer.id, "0")
    assert r.xlen(STAFF_AUDIT.key()) == 2


def test_the_store_call_that_writes_the_flag_says_whether_it_changed_it(
    r: redis.Redis, buyer: Someone
) -> None:
    assert not staff_set(client=r, person_id=buyer.id, is_staff=False).changed
    assert r.hget(PERSON.key(person_id=buyer.id), "is_staff") == "0"
    assert staff_set(client=r, person_id=buyer.id, is_staff=True).changed
    assert not staff_set(client=r, person_id=buyer.id, is_staff=True).changed


def test_two_grants_at_once_are_audited_once(
    r: redis.Redis, buyer: Someone, staff: Someone
) -> None:
    # The decision is the writing call's own: whichever thread comes second finds the flag
    # set, whatever either read before.
    start = threading.Barrier(8)

    def grant() -> None:
        start.wait()
        staff_grant_set(client=r, actor=staff.person, person_id=buyer.id, is_staff=True)

    threads = [threading.Thread(target=grant) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert r.xlen(STAFF_AUDIT.key()) == 1
