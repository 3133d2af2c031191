"""A confirmation link confirms only the address the person still has: an address changed while
the link was being confirmed is not confirmed by it (the steps are run here in the racy order),
and a claim whose confirmation was cut off before the flag never pins an address to an account."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from accounts import emails, services
from accounts.calls import EMAIL_CLAIM, EMAIL_CONFIRM
from strongroom import keyspace as ks
from strongroom.libraries import fcall
from tests.conftest import Someone
from tests.mail_support import with_address


def _claim(r: redis.Redis, person_id: int, address: str) -> None:
    """The first step of a confirmation alone (one cut off before its flag was set)."""
    keys, args = EMAIL_CLAIM.call(
        keys={"by_email": ks.PERSON_BY_EMAIL.key()},
        args={"email": address, "person_id": person_id},
    )
    assert fcall(r, EMAIL_CLAIM.name, keys, args) == "ok"


def test_an_address_changed_while_its_link_is_confirmed_is_not_confirmed(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_address(r, second_buyer, "bo@example.test")
    emails.email_set(client=r, person_id=buyer.id, email="anna@example.test")
    token = emails.verify_token_make(person_id=buyer.id, email="anna@example.test")
    real_fcall = emails.fcall
    changed: list[bool] = []

    def change_then_claim(client: Any, function: str, keys: Any, args: Any, **kw: Any) -> Any:
        # The link's check has passed; now, before the claim and the flag, the address is
        # changed to someone else's.
        if function == EMAIL_CLAIM.name and not changed:
            changed.append(True)
            emails.email_set(client=r, person_id=buyer.id, email="bo@example.test")
        return real_fcall(client, function, keys, args, **kw)

    monkeypatch.setattr(emails, "fcall", change_then_claim)
    assert emails.email_verify(client=r, token=token) is None
    assert changed
    person = ks.PERSON.key(person_id=buyer.id)
    assert r.hmget(person, "email", "email_verified") == ["bo@example.test", "0"]
    # The claim of the address the link was for is let go; the other's stays theirs.
    assert r.hget(ks.PERSON_BY_EMAIL.key(), "anna@example.test") is None
    assert r.hget(ks.PERSON_BY_EMAIL.key(), "bo@example.test") == str(second_buyer.id)


def test_a_claim_cut_off_before_its_flag_is_forgotten_when_the_address_changes(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    emails.email_set(client=r, person_id=buyer.id, email="anna@example.test")
    _claim(r, buyer.id, "anna@example.test")
    emails.email_set(client=r, person_id=buyer.id, email="anna2@example.test")
    assert r.hget(ks.PERSON_BY_EMAIL.key(), "anna@example.test") is None
    # So its owner can confirm it on another account.
    emails.email_set(client=r, person_id=second_buyer.id, email="anna@example.test")
    token = emails.verify_token_make(person_id=second_buyer.id, email="anna@example.test")
    verified = emails.email_verify(client=r, token=token)
    assert verified is not None and not verified.taken


def test_a_claim_cut_off_before_its_flag_is_forgotten_with_the_account(
    r: redis.Redis, buyer: Someone
) -> None:
    emails.email_set(client=r, person_id=buyer.id, email="anna@example.test")
    _claim(r, buyer.id, "anna@example.test")
    assert services.person_delete(client=r, person_id=buyer.id)
    assert r.hget(ks.PERSON_BY_EMAIL.key(), "anna@example.test") is None


def test_a_link_opened_again_after_its_claim_was_cut_off_confirms_the_address(
    r: redis.Redis, buyer: Someone
) -> None:
    emails.email_set(client=r, person_id=buyer.id, email="anna@example.test")
    _claim(r, buyer.id, "anna@example.test")
    token = emails.verify_token_make(person_id=buyer.id, email="anna@example.test")
    assert emails.email_verify(client=r, token=token) is not None
    assert emails.email_verify(client=r, token=token) is not None  # once more: the same
    assert r.hget(ks.PERSON.key(person_id=buyer.id), "email_verified") == "1"
    assert r.hget(ks.PERSON_BY_EMAIL.key(), "anna@example.test") == str(buyer.id)


def test_the_flag_is_set_only_for_the_address_the_person_has(
    r: redis.Redis, buyer: Someone
) -> None:
    person = ks.PERSON.key(person_id=buyer.id)
    emails.email_set(client=r, person_id=buyer.id, email="anna@example.test")

    def confirm(address: str) -> int:
        keys, args = EMAIL_CONFIRM.call(keys={"person": person}, args={"email": address})
        return int(fcall(r, EMAIL_CONFIRM.name, keys, args))

    assert confirm("other@example.test") == 0
    assert r.hget(person, "email_verified") == "0"
    assert confirm("anna@example.test") == 1
    assert confirm("anna@example.test") == 1
    assert r.hget(person, "email_verified") == "1"
    gone = ks.PERSON.key(person_id=buyer.id + 1000)
    keys, args = EMAIL_CONFIRM.call(keys={"person": gone}, args={"email": ""})
    assert fcall(r, EMAIL_CONFIRM.name, keys, args) == 0 and not r.exists(gone)
