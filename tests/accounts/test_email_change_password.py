"""Changing the account's address asks for the current password: a session left open (a shared
computer, a stolen cookie) is not enough to move the address that resets the password, and with
it the account. The language of mail alone, or the same address saved again, asks for nothing
and sends nothing."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from django.test import Client

from accounts import emails, services
from accounts.selectors import mail_target, person_id_by_email
from strongroom import keyspace as ks
from strongroom.decoders import text_or_none, text_values
from strongroom.outbox import outbox_pending
from tests.conftest import Someone


def confirmed(r: redis.Redis, someone: Someone, address: str) -> None:
    emails.email_set(client=r, person_id=someone.id, email=address)
    token = emails.verify_token_make(person_id=someone.id, email=address)
    assert emails.email_verify(client=r, token=token) is not None
    r.delete(ks.MAIL_OUTBOX.key())


def address_of(r: redis.Redis, someone: Someone) -> tuple[str | None, str | None]:
    email, verified = text_values(
        r.hmget(ks.PERSON.key(person_id=someone.id), "email", "email_verified")
    )
    return email, verified


def mail_kinds(r: redis.Redis) -> list[str]:
    return [p.kind for p in outbox_pending(client=r)]


def test_an_open_session_without_the_password_cannot_change_the_address(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    confirmed(r, buyer, "owner@example.test")
    session = client_for(buyer)
    for sent in (
        {"email": "attacker@evil.example", "language": "en"},
        {"email": "attacker@evil.example", "language": "en", "current_password": "guess-1234"},
        {"email": "", "language": "en"},
    ):
        answer = session.post("/accounts/me/email/", sent)
        page = answer.content.decode()
        assert answer.status_code == 400
        assert (
            "Enter your current password to change the address." in page
            or "Your current password is wrong." in page
        )
        assert re.search(r'<input[^>]*name="current_password"[^>]*autofocus', page)
        assert address_of(r, buyer) == ("owner@example.test", "1")
        assert mail_kinds(r) == []
    moved = session.post(
        "/accounts/me/email/",
        {"email": "new@example.test", "language": "en", "current_password": buyer.password},
    )
    assert moved.status_code == 302
    # The confirmed address stays in use until the new one's link is opened.
    assert address_of(r, buyer) == ("owner@example.test", "1")
    assert sorted(mail_kinds(r)) == ["email_change_asked", "verify"]


def test_the_language_alone_and_the_same_address_again_ask_nothing_and_send_nothing(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    session = client_for(buyer)
    first = {"email": "anna@example.test", "language": "en", "current_password": buyer.password}
    assert session.post("/accounts/me/email/", first).status_code == 302
    assert mail_kinds(r) == ["verify"]
    # Not confirmed yet: saving the form again (another language) sends no second link.
    again = session.post(
        "/accounts/me/email/", {"email": "anna@example.test", "language": "zh-hans"}
    )
    assert again.status_code == 302
    assert mail_kinds(r) == ["verify"]
    assert r.hget(ks.PERSON.key(person_id=buyer.id), "lang") == "zh-hans"


def test_wrong_passwords_for_the_address_meet_the_login_throttle(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    confirmed(r, buyer, "owner@example.test")
    session = client_for(buyer)
    wrong = {"email": "attacker@evil.example", "language": "en", "current_password": "nope-nope"}
    statuses = [session.post("/accounts/me/email/", wrong).status_code for _ in range(8)]
    assert statuses[0] == 400 and statuses[-1] == 429
    locked = session.post("/accounts/me/email/", wrong)
    assert locked.status_code == 429 and int(locked["Retry-After"]) > 0
    assert address_of(r, buyer) == ("owner@example.test", "1")


@pytest.mark.parametrize("language", ["zh-hans"])
def test_the_refusal_speaks_chinese(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client], language: str
) -> None:
    session = client_for(buyer)
    session.cookies["django_language"] = language
    page = session.post("/accounts/me/email/", {"email": "x@example.test", "language": "en"})
    assert page.status_code == 400
    text = page.content.decode()
    assert "请输入当前密码以更改地址。" in text and "仅在更改或删除地址时需要。" in text


def pending_of(r: redis.Redis, someone: Someone) -> str | None:
    return text_or_none(r.hget(ks.PERSON.key(person_id=someone.id), "email_pending"))


def link_for(someone: Someone, address: str) -> str:
    return f"/accounts/verify/{emails.verify_token_make(person_id=someone.id, email=address)}/"


def test_a_new_address_waits_while_the_confirmed_one_stays_in_use_until_its_link_is_opened(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    confirmed(r, buyer, "owner@example.test")
    session = client_for(buyer)
    change = {"email": "typo@example.test", "language": "en", "current_password": buyer.password}
    answer = session.post("/accounts/me/email/", change, follow=True)
    page = answer.content.decode()
    assert "your address changes when you open it" in page
    assert "New address, waiting for its link to be opened:" in page
    assert "owner@example.test" in page and "typo@example.test" in page
    assert address_of(r, buyer) == ("owner@example.test", "1")
    assert pending_of(r, buyer) == "typo@example.test"
    # Mail and resets still go to the confirmed address.
    target = mail_target(client=r, person_id=buyer.id)
    assert target is not None and target.email == "owner@example.test"
    r.delete(ks.MAIL_OUTBOX.key())
    Client().post("/accounts/password/forgot/", {"login": "owner@example.test"})
    assert mail_kinds(r) == ["reset"]
    # "Send the link again" sends it to the waiting address.
    r.delete(ks.MAIL_OUTBOX.key())
    session.post("/accounts/me/email/again/")
    assert [p.member.rsplit("|", 1)[1] for p in outbox_pending(client=r)] == ["typo@example.test"]
    # Its link opened: it takes the confirmed one's place, which is told and let go.
    r.delete(ks.MAIL_OUTBOX.key())
    assert Client().post(link_for(buyer, "typo@example.test")).status_code in (200, 302)
    assert address_of(r, buyer) == ("typo@example.test", "1") and pending_of(r, buyer) is None
    assert mail_kinds(r) == ["email_changed"]
    assert person_id_by_email(client=r, email="owner@example.test") is None
    assert person_id_by_email(client=r, email="typo@example.test") == buyer.id


def test_going_back_or_a_new_password_cancels_the_waiting_address(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    confirmed(r, buyer, "owner@example.test")
    session = client_for(buyer)
    for asked in ("typo@example.test", "owner@example.test"):
        sent = {"email": asked, "language": "en", "current_password": buyer.password}
        assert session.post("/accounts/me/email/", sent).status_code == 302
    assert pending_of(r, buyer) is None
    Client().post(link_for(buyer, "typo@example.test"))
    assert address_of(r, buyer) == ("owner@example.test", "1")
    # Asked again, then the owner (told by mail) chooses a new password: the link stops working.
    sent = {"email": "thief@evil.example", "language": "en", "current_password": buyer.password}
    session.post("/accounts/me/email/", sent)
    assert pending_of(r, buyer) == "thief@evil.example"
    services.password_set(client=r, person_id=buyer.id, password="a-fresh-Secret-42")
    assert pending_of(r, buyer) is None
    Client().post(link_for(buyer, "thief@evil.example"))
    assert address_of(r, buyer) == ("owner@example.test", "1")
    assert person_id_by_email(client=r, email="thief@evil.example") is None


def test_one_mailbox_written_two_ways_is_one_address(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    """`u@exämple.com` and `U@XN--EXMPLE-CUA.COM` are one mailbox: the second account to confirm
    it finds it taken, and a reset asked for either way finds its owner."""
    confirmed(r, buyer, "u@exämple.com")
    emails.email_set(client=r, person_id=second_buyer.id, email="U@XN--EXMPLE-CUA.COM")
    assert r.hget(ks.PERSON.key(person_id=second_buyer.id), "email") == "u@exämple.com"
    token = emails.verify_token_make(person_id=second_buyer.id, email="u@exämple.com")
    verified = emails.email_verify(client=r, token=token)
    assert verified is not None and verified.taken
    for written in ("u@exämple.com", "U@XN--EXMPLE-CUA.COM", " u@EXÄMPLE.com "):
        assert person_id_by_email(client=r, email=written) == buyer.id
    assert person_id_by_email(client=r, email="u@xn--zz.example") is None


@pytest.mark.parametrize("confirmed_first", [True, False])
def test_the_same_change_sent_five_times_at_once_is_made_and_mailed_once(
    r: redis.Redis, buyer: Someone, confirmed_first: bool
) -> None:
    """Five identical forms at once (a script, a flaky network's retries): one call decides
    and writes the address, so one of them changes it and only that one sends mail."""
    if confirmed_first:
        confirmed(r, buyer, "owner@example.test")
    start = threading.Barrier(5)

    def change() -> str:
        start.wait()
        return emails.email_set(client=r, person_id=buyer.id, email="new@example.test")

    with ThreadPoolExecutor(5) as pool:
        outcomes = sorted(pool.map(lambda _: change(), range(5)))
    made = "waiting" if confirmed_first else "sent"
    assert outcomes == sorted([made] + ["saved"] * 4)
    expected = ["email_change_asked", "verify"] if confirmed_first else ["verify"]
    assert sorted(mail_kinds(r)) == expected


def test_no_address_is_written_for_a_person_who_is_gone(r: redis.Redis) -> None:
    assert emails.email_set(client=r, person_id=987654, email="ghost@example.test") == "saved"
    assert not r.exists(ks.PERSON.key(person_id=987654)) and mail_kinds(r) == []
