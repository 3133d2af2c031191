"""The mail queue (/staff/mail/): what each message is about, in staff words."""

from __future__ import annotations

import re
from collections.abc import Callable

import redis
from django.test import Client

from booking.domain.formats import WAIT_FIELDS
from booking.domain.keys import RoomKeys
from booking.selectors import OutboxSubject, outbox_subject
from strongroom.outbox import FIELD, entry, mail_queue
from tests.booking_support import claim, request
from tests.conftest import Someone


def about_cells(html: str) -> list[str]:
    table = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = [re.findall(r"<td>(.*?)</td>", row, re.S) for row in table.split("</tr>")]
    return [re.sub(r"\s+", " ", cells[1]).strip() for cells in rows if cells]


def test_a_message_about_a_booking_names_its_reference_not_an_internal_entry(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    made = claim(r, request("A", 101, (3,)), owner=str(buyer.id)).booking  # its receipt waits
    assert made is not None
    r.xadd(RoomKeys(7).outbox, {FIELD: entry("cancel", "007-gone0000000000000000000")})
    mail_queue(r, kind="password_changed", args=(buyer.id,))
    html = client_for(staff).get("/staff/mail/").content.decode()
    assert f"{made.id}|" not in html and "007-gone" not in html
    about = about_cells(html)
    assert f'booking <a href="/staff/bookings/{made.id}/">{made.reference}</a>' in about
    assert "a booking no longer stored" in about
    # A person by their name (the id is in the link); one no longer stored by their id.
    assert f'<a href="/staff/people/{buyer.id}/">{buyer.person.username}</a>' in about
    mail_queue(r, kind="password_changed", args=(9999,))
    html = client_for(staff).get("/staff/mail/").content.decode()
    assert '<a href="/staff/people/9999/">person 9999</a>' in about_cells(html)


def test_booking_says_what_each_of_its_outbox_entries_is_about() -> None:
    wait = {"person": "12", "cls": "B", "day": "340", "hstart": "8", "hend": "10", "box": "0"}
    freed = entry("freed", 7, *(wait[name] for name in WAIT_FIELDS), "1")
    assert outbox_subject(freed) == OutboxSubject(person_id="12")
    assert outbox_subject("confirm|007-abc|12") == OutboxSubject(booking_id="007-abc")
    assert outbox_subject("cancel_to|007-abc|en|Anna|a%40b") == OutboxSubject("007-abc")
    assert outbox_subject("moved|007-abc|2") == OutboxSubject("007-abc")
    assert outbox_subject("remind|007-abc|2026-12-03") == OutboxSubject("007-abc")
    assert outbox_subject("later_kind|x") == OutboxSubject()
