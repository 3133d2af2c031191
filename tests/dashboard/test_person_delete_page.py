"""Staff deleting a person (/staff/people/<id>/delete/): a confirmation page, then the buyer's
own deletion (bookings cancelled with mail, the account forgotten), audited; the refusals."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
import redis
import time_machine
from django.test import Client

from accounts.selectors import person_get, person_id_find
from accounts.services import account_delete
from booking.domain.keys import RoomKeys
from booking.engine.audit import audit_entries
from booking.engine.bookings import booking_get
from booking.web.mail import cancel_to_render
from strongroom.audit import staff_audit_entries
from strongroom.decoders import text_stream
from tests.booking_support import NOW, claim, request
from tests.conftest import Someone, person_make
from tests.mail_support import with_address


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def test_staff_delete_a_buyer_whose_bookings_are_cancelled_with_mail_and_audited(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    with_address(r, buyer, "anna@example.test")
    made = claim(r, request("B", 12, (4,), hour_start=9, hour_end=11), owner=str(buyer.id))
    assert made.booking is not None
    client = client_for(staff)
    client.handler.enforce_csrf_checks = True
    person = client.get(f"/staff/people/{buyer.id}/").content.decode()
    assert f'href="/staff/people/{buyer.id}/delete/"' in person
    page = client.get(f"/staff/people/{buyer.id}/delete/")
    html = page.content.decode()
    assert page.status_code == 200 and 'id="person-delete"' in html
    assert "upcoming bookings are cancelled" in html and "account is forgotten" in html
    assert person_get(client=r, person_id=buyer.id) is not None  # a GET deletes nothing
    assert client.post(f"/staff/people/{buyer.id}/delete/").status_code == 403  # no CSRF token
    assert person_get(client=r, person_id=buyer.id) is not None
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert token
    done = client.post(f"/staff/people/{buyer.id}/delete/", {"csrfmiddlewaretoken": token[1]})
    assert done.status_code == 302 and done["Location"] == "/staff/people/"
    assert person_get(client=r, person_id=buyer.id) is None
    assert person_id_find(client=r, username=buyer.username) is None
    cancelled = booking_get(client=r, booking_id=made.booking.id)
    assert cancelled is not None and cancelled.status == "cancelled"
    mail = [fields["m"] for _id, fields in text_stream(r.xrange(RoomKeys(12).outbox))]
    assert any(m.startswith(f"cancel_to|{made.booking.id}|") for m in mail)  # to her address
    (entry,) = staff_audit_entries(client=r, kind="person_delete")
    # Only the id: the page promised that their name is forgotten.
    assert (entry.actor, entry.subject, entry.detail) == (str(staff.id), str(buyer.id), "")
    log = client.get("/staff/audit/?kind=person_delete").content.decode()
    table = log[log.index('<table class="log">') :]  # (above it, the one-off "deleted" note)
    assert "person deleted" in table and buyer.username not in table
    assert client.get(f"/staff/people/{buyer.id}/delete/").status_code == 404


def test_staff_cannot_delete_themselves_nor_another_staff_member(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    other = person_make(r, "Second_Curator", is_staff=True)
    client = client_for(staff)
    mine = client.get(f"/staff/people/{staff.id}/")
    assert 'id="delete-person"' not in mine.content.decode()
    for target, why in ((staff, "cannot delete your own account"), (other, "revoke their staff")):
        page = client.get(f"/staff/people/{target.id}/delete/")
        assert page.status_code == 403 and why in page.content.decode()
        assert 'id="person-delete"' not in page.content.decode()
        refused = client.post(f"/staff/people/{target.id}/delete/")
        assert refused.status_code == 403 and why in refused.content.decode()
        assert person_get(client=r, person_id=target.id) is not None
    assert staff_audit_entries(client=r, kind="person_delete") == []
    assert client_for(buyer).post(f"/staff/people/{other.id}/delete/").status_code == 403
    assert client.post("/staff/people/999999/delete/").status_code == 404


def _cancellation_mail(r: redis.Redis, room: int) -> str:
    (member,) = [
        fields["m"]
        for _id, fields in text_stream(r.xrange(RoomKeys(room).outbox))
        if fields["m"].startswith("cancel_to|")
    ]
    message = cancel_to_render(r, member.split("|")[1:])
    assert message is not None
    return str(message.body)


@pytest.mark.parametrize(("language", "by_staff", "by_self"), [
    ("en", "our staff closed your account", "you deleted your account"),
    ("zh-hans", "我们的工作人员关闭了您的账户", "您删除了账户"),
])  # fmt: skip
def test_a_deletion_by_staff_is_told_and_audited_as_theirs_not_the_buyers(
    r: redis.Redis, buyer: Someone, staff: Someone, language: str, by_staff: str, by_self: str
) -> None:
    with_address(r, buyer, "anna@example.test", language=language)
    made = claim(r, request("B", 12, (4,), hour_start=9, hour_end=11), owner=str(buyer.id))
    assert made.booking is not None
    assert account_delete(client=r, person_id=buyer.id, staff_id=staff.id)
    body = _cancellation_mail(r, 12)
    assert by_staff in body and by_self not in body
    cancelled = booking_get(client=r, booking_id=made.booking.id)
    assert cancelled is not None and cancelled.cancelled_by == str(staff.id)
    (audited,) = audit_entries(client=r, kind="cancel")
    assert (audited.booking_id, audited.actor) == (made.booking.id, str(staff.id))


def test_a_buyers_own_deletion_is_still_told_and_audited_as_theirs(
    r: redis.Redis, buyer: Someone
) -> None:
    with_address(r, buyer, "anna@example.test")
    made = claim(r, request("B", 12, (4,), hour_start=9, hour_end=11), owner=str(buyer.id))
    assert made.booking is not None
    assert account_delete(client=r, person_id=buyer.id)
    body = _cancellation_mail(r, 12)
    assert "you deleted your account" in body and "our staff closed" not in body
    (audited,) = audit_entries(client=r, kind="cancel")
    assert (audited.booking_id, audited.actor) == (made.booking.id, str(buyer.id))
