"""Confirming an address: opening the link confirms nothing (a mail scanner, a link preview),
its page's button does; an address confirmed by one account cannot be confirmed by another."""

from __future__ import annotations

import redis
from django.test import Client

from accounts import emails
from strongroom import keyspace as ks
from strongroom.outbox import outbox_pending
from tests.conftest import Someone, person_make
from tests.mail_support import with_address


def test_opening_the_link_confirms_nothing_its_button_does(r: redis.Redis, buyer: Someone):
    emails.email_set(client=r, person_id=buyer.id, email="anna@example.test")
    token = emails.verify_token_make(person_id=buyer.id, email="anna@example.test")
    link = f"/accounts/verify/{token}/"
    scanner = Client()
    assert scanner.head(link).status_code == 200
    page = scanner.get(link)
    assert page.status_code == 200 and "anna@example.test" in page.content.decode()
    assert 'method="post"' in page.content.decode()
    assert r.hget(ks.PERSON.key(person_id=buyer.id), "email_verified") == "0"
    assert r.hget(ks.PERSON_BY_EMAIL.key(), "anna@example.test") is None
    csrf = Client(enforce_csrf_checks=True)
    assert csrf.post(link).status_code == 403  # the button's form carries its token
    assert Client().post(link).status_code == 302
    assert r.hget(ks.PERSON.key(person_id=buyer.id), "email_verified") == "1"


def test_an_address_confirmed_by_one_account_is_not_confirmed_for_another(r: redis.Redis):
    zhang = person_make(r, "张伟")
    with_address(r, zhang, "zh1@example.org", language="zh-hans")
    signup = {"username": "dupmail", "password1": "Dup-mail-pass-7", "password2": ""}
    signup["password2"] = signup["password1"]
    browser = Client()
    taken = browser.post("/accounts/signup/", {**signup, "email": "zh1@example.org"}, follow=True)
    fresh = Client().post(
        "/accounts/signup/", {**signup, "username": "freshmail", "email": "f@example.org"},
        follow=True,
    )  # fmt: skip
    # Sign-up says the same whether or not the address is someone's: no one learns it.
    assert "We sent a link to zh1@example.org" in taken.content.decode()
    assert "We sent a link to f@example.org" in fresh.content.decode()
    dupmail_id = int(r.hget(ks.PERSON_BY_NAME.key(), "dupmail"))  # type: ignore[arg-type]
    token = emails.verify_token_make(person_id=dupmail_id, email="zh1@example.org")
    answer = browser.post(f"/accounts/verify/{token}/", follow=True).content.decode()
    assert "already in use by another account" in answer
    assert "Your email address is confirmed" not in answer
    assert r.hget(ks.PERSON.key(person_id=dupmail_id), "email_verified") == "0"
    assert r.hget(ks.PERSON_BY_EMAIL.key(), "zh1@example.org") == str(zhang.id)
    r.delete(ks.MAIL_OUTBOX.key())
    Client().post("/accounts/password/forgot/", {"login": "zh1@example.org"})
    resets = [p.member for p in outbox_pending(client=r) if p.kind == "reset"]
    assert len(resets) == 1 and resets[0].split("|")[1] == str(zhang.id), resets
