"""Mail someone asks for is bounded whatever was sent before: reset links and "send the link
again" through one gate (per person, per address the mail goes to, per asking client)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
import time_machine
from django.test import Client

from accounts import emails, services
from strongroom import keyspace as ks
from strongroom.outbox import outbox_pending
from strongroom.outbox_delivery import outbox_send
from tests.conftest import Someone


@pytest.fixture
def mail_dir(settings: object, tmp_path: Path) -> Path:
    directory = tmp_path / "mail"
    settings.STRONGROOM_MAIL_DIR = directory  # type: ignore[attr-defined]
    settings.EMAIL_BACKEND = "strongroom.mail.FilePerMessageBackend"  # type: ignore[attr-defined]
    return directory


def verified(r: redis.Redis, someone: Someone, address: str) -> None:
    emails.email_set(client=r, person_id=someone.id, email=address)
    token = emails.verify_token_make(person_id=someone.id, email=address)
    assert emails.email_verify(client=r, token=token) is not None
    r.delete(ks.MAIL_OUTBOX.key())


def queued(r: redis.Redis, kind: str) -> list[str]:
    return [p.member for p in outbox_pending(client=r) if p.kind == kind]


def test_twenty_reset_requests_for_one_person_give_one_mail_even_once_it_is_sent(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    verified(r, buyer, "anna@example.test")
    for n in range(20):
        Client(REMOTE_ADDR=f"10.0.0.{n}").post(
            "/accounts/password/forgot/", {"login": buyer.username}
        )
        outbox_send(client=r)  # sent at once: the gate does not rest on what is queued
    assert len(list(mail_dir.glob("*.eml"))) == 1
    with time_machine.travel(time.time() + 11 * 60, tick=False):
        Client().post("/accounts/password/forgot/", {"login": buyer.username})
    assert len(queued(r, "reset")) == 1  # ten minutes later, one more


def test_one_client_cannot_ask_resets_for_many_people_without_end(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, staff: Someone
) -> None:
    for someone, address in ((buyer, "a@example.test"), (second_buyer, "b@example.test"),
                             (staff, "c@example.test")):  # fmt: skip
        verified(r, someone, address)
    for _round in range(3):
        for someone in (buyer, second_buyer, staff):
            Client().post("/accounts/password/forgot/", {"login": someone.username})
    assert len(queued(r, "reset")) == 3  # one each: the person gate
    assert emails.ASKED_PER_CLIENT >= 3


def test_twenty_send_again_give_at_most_the_gates_number(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    browser = client_for(buyer)
    browser.post(
        "/accounts/me/email/",
        {"email": "anna@example.test", "language": "en", "current_password": buyer.password},
    )
    r.delete(ks.MAIL_OUTBOX.key())
    answers = [browser.post("/accounts/me/email/again/", follow=True) for _ in range(20)]
    assert len(queued(r, "verify")) == emails.ASKED_PER_PERSON == 1
    assert "No link was sent" in answers[-1].content.decode()
    assert "ask again in 10 minutes" in answers[-1].content.decode()
    # Over an hour, one every ten minutes at most, and never more than the address's share.
    for step in range(1, 6):  # within the hour
        with time_machine.travel(time.time() + step * 11 * 60, tick=False):
            for _ in range(5):
                browser.post("/accounts/me/email/again/")
    sent = len(queued(r, "verify"))
    assert sent == emails.ASKED_PER_ADDRESS


def test_alternating_addresses_cannot_exceed_the_gate(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    """Changing the address back and forth and asking again each time: each address gets at
    most its share, the person at most theirs."""
    browser = client_for(buyer)
    for n in range(20):
        address = "target@example.org" if n % 2 else "other@example.org"
        browser.post(
            "/accounts/me/email/",
            {"email": address, "language": "en", "current_password": buyer.password},
        )
        browser.post("/accounts/me/email/again/")
    members = queued(r, "verify")
    to = Counter(member.rsplit("|", 1)[1] for member in members)
    assert sum(to.values()) <= emails.VERIFY_MAILS_PER_PERSON + emails.ASKED_PER_PERSON
    assert all(
        count <= emails.VERIFY_MAILS_PER_ADDRESS + emails.ASKED_PER_ADDRESS for count in to.values()
    ), to


def test_a_link_goes_to_the_address_its_gate_counted_or_nowhere(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client], mail_dir: Path
) -> None:
    """The address is fixed in the entry when it is queued: an address changed before the
    sender ran does not receive the older entry's link."""
    browser = client_for(buyer)
    browser.post(
        "/accounts/me/email/",
        {"email": "first@example.org", "language": "en", "current_password": buyer.password},
    )
    services.language_set(client=r, person_id=buyer.id, language="en")
    r.hset(ks.PERSON.key(person_id=buyer.id), "email", "second@example.org")
    report = outbox_send(client=r)
    assert (report.sent, report.dropped) == (0, 1)
    assert not list(mail_dir.glob("*.eml"))


def test_strangers_setting_an_address_and_clearing_it_do_not_use_up_its_hour(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    """Three throwaway accounts each set someone's address, ask again, and clear it before a
    mail went: nothing reached the address, so nothing of its allowance is spent, and its
    owner's own confirmation goes."""
    from tests.conftest import person_make

    victim = "victim@example.org"
    for n in range(3):
        stranger = person_make(r, f"stranger_{n}")
        assert emails.email_set(client=r, person_id=stranger.id, email=victim) == "sent"
        emails.email_resend(client=r, person_id=stranger.id, client_id=f"10.9.9.{n}")
        emails.email_set(client=r, person_id=stranger.id, email="")
    report = outbox_send(client=r)
    assert report.sent == 0 and not list(mail_dir.glob("*.eml"))
    assert emails.email_set(client=r, person_id=buyer.id, email=victim) == "sent"
    outbox_send(client=r)
    assert len(list(mail_dir.glob("*.eml"))) == 1
