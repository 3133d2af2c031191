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
from booking.domain.keys import RoomKeys
from booking.engine.bookings import booking_get
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
    assert (entry.actor, entry.subject, entry.detail) == (
        str(staff.id),
        str(buyer.id),
        buyer.username,
    )
    log = client.get("/staff/audit/?kind=person_delete").content.decode()
    assert "person deleted" in log and buyer.username in log
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
