"""Staff acting for a buyer: moving any booking and sending a receipt again, through HTTP."""

from __future__ import annotations

import email
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.codes import code_display
from booking.domain.records import Booking
from booking.engine import audit
from booking.engine.bookings import booking_get
from strongroom import keyspace as ks
from strongroom.outbox_delivery import outbox_send
from tests.booking_support import NOW, claim, day, request
from tests.conftest import Someone
from tests.mail_support import mail_to_files, with_address


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def booked(r: redis.Redis, someone: Someone, **extra: Any) -> Booking:
    found = claim(r, request("B", hour_start=8, hour_end=10, **extra), owner=str(someone.id))
    assert found.booking is not None
    return found.booking


def test_staff_move_a_buyers_booking_to_another_room(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    mine = booked(r, buyer)
    client = client_for(staff)
    detail = client.get(f"/staff/bookings/{mine.id}/").content.decode()
    assert f'href="/staff/bookings/{mine.id}/move/"' in detail
    form = client.get(f"/staff/bookings/{mine.id}/move/").content.decode()
    assert 'name="room"' in form and 'value="007"' in form
    data = {"room": "12", "date": ["2026-12-04"], "hour_start": "9", "hour_end": "11"}
    answer = client.post(f"/staff/bookings/{mine.id}/move/", data)
    assert answer.status_code == 302
    moved = booking_get(client=r, booking_id=mine.id)
    assert moved is not None and moved.room == 12 and moved.dates == (day(4),)
    assert answer["Location"] == f"/staff/bookings/{moved.id}/"
    assert moved.owner_id == str(buyer.id) and moved.reference == mine.reference
    trail = audit.booking_audit(client=r, booking_id=mine.id)
    assert ("move", str(staff.id)) in [(e.kind, e.actor) for e in trail]
    page = client.get(answer["Location"]).content.decode()
    assert "The booking is moved" in page


def test_a_staff_move_to_another_room_names_the_staff_member_and_keeps_the_whole_history(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    mine = booked(r, buyer)
    client = client_for(staff)
    data = {"room": "12", "date": ["2026-12-04"], "hour_start": "9", "hour_end": "11"}
    answer = client.post(f"/staff/bookings/{mine.id}/move/", data)
    moved = booking_get(client=r, booking_id=mine.id)
    assert moved is not None and moved.id != mine.id and moved.owner_id == str(buyer.id)
    moves = [
        e
        for booking_id in (mine.id, moved.id)
        for e in audit.booking_audit(client=r, booking_id=booking_id)
        if e.kind == "move"
    ]
    assert len(moves) == 2 and {e.actor for e in moves} == {str(staff.id)}
    page = client.get(answer["Location"]).content.decode()
    trail = page[page.index('id="trail"') :]
    kinds = re.findall(r'<tr data-kind="([a-z_]+)">', trail)
    assert kinds.count("move") == 2 and "claim" in kinds  # the claim is under the old id
    assert buyer.username not in re.findall(r'<tr data-kind="move">.*?</tr>', trail, re.S)[0]


def test_staff_moves_are_refused_the_same_way_and_buyers_may_not_use_the_staff_page(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    mine = booked(r, buyer)
    booked(r, second_buyer, dates=(4,))
    data = {"room": "7", "date": ["2026-12-04"], "hour_start": "9", "hour_end": "11"}
    taken = client_for(staff).post(f"/staff/bookings/{mine.id}/move/", data)
    assert taken.status_code == 409 and "Not moved" in taken.content.decode()
    assert client_for(buyer).post(f"/staff/bookings/{mine.id}/move/", data).status_code == 403
    assert client_for(buyer).get(f"/staff/bookings/{mine.id}/move/").status_code == 403
    assert client_for(staff).get("/staff/bookings/007-nope/move/").status_code == 404
    assert booking_get(client=r, booking_id=mine.id) == mine


def test_staff_send_the_receipt_again(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
    settings: Any,
    tmp_path: Path,
) -> None:
    mail_to_files(settings, tmp_path)
    with_address(r, buyer, "anna@example.test")
    mine = booked(r, buyer)
    outbox_send(client=r)
    answer = client_for(staff).post(f"/staff/bookings/{mine.id}/receipt/")
    assert answer.status_code == 302
    assert outbox_send(client=r).sent == 1
    mails = [email.message_from_bytes(p.read_bytes()) for p in tmp_path.glob("*.eml")]
    assert len(mails) == 2
    for message in mails:
        body = next(p for p in message.walk() if p.get_content_type() == "text/plain")
        text = body.get_payload(decode=True).decode()  # type: ignore[union-attr]
        assert code_display(mine.pickup_code()) in text
    kinds = [e.kind for e in audit.booking_audit(client=r, booking_id=mine.id)]
    assert kinds[0] == "receipt"
    assert client_for(buyer).post(f"/staff/bookings/{mine.id}/receipt/").status_code == 403
    assert client_for(staff).post("/staff/bookings/007-nope/receipt/").status_code == 404


def test_the_receipt_of_a_buyer_without_a_confirmed_address_is_not_said_to_be_sent(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
    settings: Any,
    tmp_path: Path,
) -> None:
    mail_to_files(settings, tmp_path)
    mine = booked(r, buyer)
    outbox_send(client=r)
    answer = client_for(staff).post(f"/staff/bookings/{mine.id}/receipt/", follow=True)
    page = answer.content.decode()
    assert "The receipt cannot be sent: the buyer has no confirmed email address" in page
    assert "on its way" not in page
    assert outbox_send(client=r).sent == 0 and not list(tmp_path.glob("*.eml"))
    kinds = [e.kind for e in audit.booking_audit(client=r, booking_id=mine.id)]
    assert "receipt" not in kinds
    # Still owed: it goes out once they confirm an address.
    assert r.sismember(ks.BOOKING_RECEIPTS_OWED.key(owner_id=buyer.id), mine.id)


def test_the_staff_move_page_speaks_chinese(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    mine = booked(r, buyer)
    page = client_for(staff).get(f"/staff/bookings/{mine.id}/move/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    text = page.content.decode()
    assert "代买家操作" in text and "改期" in text


def test_staff_book_for_a_buyer_who_gets_the_receipt(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
    settings: Any,
    tmp_path: Path,
) -> None:
    mail_to_files(settings, tmp_path)
    with_address(r, buyer, "anna@example.test")
    client = client_for(staff)
    page = client.get(f"/staff/people/{buyer.id}/").content.decode()
    assert "anna@example.test" in page and 'action="/staff/people/' in page
    # Its hours read as hours (they read ":00" once): from 00:00, to 24:00.
    assert '<option value="0">00:00</option>' in page
    assert '<option value="24">24:00</option>' in page and ">:00<" not in page
    data = {"request_id": "staff-book-request-01", "cls": "B", "room": "11",
            "date": ["2026-12-06"], "hour_start": "9", "hour_end": "11", "boxes": ""}  # fmt: skip
    answer = client.post(f"/staff/people/{buyer.id}/book/", data)
    assert answer.status_code == 302 and answer["Location"].startswith("/staff/bookings/011-")
    again = client.post(f"/staff/people/{buyer.id}/book/", data)  # a double press books once
    assert again["Location"] == answer["Location"]
    booking_id = answer["Location"].split("/")[3]
    made = booking_get(client=r, booking_id=booking_id)
    assert made is not None and made.owner_id == str(buyer.id) and made.hours == (9, 11)
    assert outbox_send(client=r).sent == 1
    (receipt,) = [email.message_from_bytes(p.read_bytes()) for p in tmp_path.glob("*.eml")]
    assert receipt["Date"].endswith("+0800")  # the site's clock, not "-0000" (zone unknown)
    body = next(p for p in receipt.walk() if p.get_content_type() == "text/plain")
    assert code_display(made.pickup_code()) in body.get_payload(decode=True).decode()  # type: ignore[union-attr]
    assert made.reference in client.get(f"/staff/people/{buyer.id}/").content.decode()
    # One audit entry, naming the staff member who booked (not the buyer, who did nothing).
    entries = [
        (e.kind, e.actor, e.detail) for e in audit.booking_audit(client=r, booking_id=made.id)
    ]
    assert entries == [
        ("claim", str(staff.id), f"booked by staff for {buyer.username}: B 2026-12-06")
    ]
    log = client.get("/staff/audit/?kind=claim").content.decode()
    assert f"booked by staff for {buyer.username}: B 2026-12-06" in log


def test_staff_book_for_refuses_a_room_in_full_width_digits_as_the_booking_form_does(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    data = {"request_id": "staff-book-request-wide", "cls": "A", "room": "\uff10\uff10\uff17",
            "date": ["2026-12-06"]}  # fmt: skip
    refused = client_for(staff).post(f"/staff/people/{buyer.id}/book/", data)
    assert refused.status_code == 400
    said = "The room must be a number from 001 to 300 (not “\uff10\uff10\uff17”)."
    assert said in refused.content.decode()
    answer = client_for(staff).post(f"/staff/people/{buyer.id}/book/", dict(data, room="007"))
    assert answer.status_code == 302 and answer["Location"].startswith("/staff/bookings/007-")


def test_staff_booking_follows_the_buyers_rules(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:  # fmt: skip
    booked(r, second_buyer, dates=(6,))
    client = client_for(staff)
    taken = {"cls": "B", "room": "7", "date": ["2026-12-06"], "hour_start": "9", "hour_end": "11"}
    answer = client.post(f"/staff/people/{buyer.id}/book/", taken)
    # Refused: the form again as it was sent, focused, with what is not free.
    assert answer.status_code == 409
    page = answer.content.decode()
    assert "some of these slots are not free" in page
    assert "Not free: Dec. 6, 2026 09:00</p>" in page  # the other buyer's hour
    assert '<option value="B" selected>' in page and 'name="room"' in page and 'value="7"' in page
    assert 'value="2026-12-06"' in page and '<option value="9" selected>' in page
    assert '<option value="11" selected>' in page and "autofocus" in page
    assert second_buyer.person.username not in page.split('id="book-for"')[1].split("</form>")[0]
    twice = client.post(f"/staff/people/{buyer.id}/book/", {**taken, "room": ["8", "9"]})
    assert twice.status_code == 400 and "sent a class, room, hour or box list twice" in (
        twice.content.decode()
    )
    today = {"cls": "A", "room": "7", "date": ["2026-11-21"]}
    after = client.post(f"/staff/people/{buyer.id}/book/", today)
    assert after.status_code == 400 and "Nov. 21, 2026" in after.content.decode()
    assert "some of these slots are not free" not in after.content.decode()
    assert client.post("/staff/people/99999/book/", taken).status_code == 404
    assert client_for(buyer).post(f"/staff/people/{buyer.id}/book/", taken).status_code == 403


def test_staff_booking_for_a_buyer_being_deleted_says_so_not_that_slots_are_taken(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    from booking.engine.owners import owner_forget

    owner_forget(client=r, owner_id=str(buyer.id), now=NOW)
    client = client_for(staff)
    free = {"cls": "A", "room": "7", "date": ["2026-12-06"]}
    answer = client.post(f"/staff/people/{buyer.id}/book/", free)
    assert answer.status_code == 409
    page = answer.content.decode()
    assert "not free" not in page and "being deleted" in page


def test_send_the_receipt_again_pressed_ten_times_at_once_queues_it_once(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    """A double click, or the press sent again: the form's request id makes it one mail."""
    import re
    import threading

    with_address(r, buyer, "anna@example.test")
    mine = booked(r, buyer)
    r.delete(ks.MAIL_OUTBOX.key())
    page = client_for(staff).get(f"/staff/bookings/{mine.id}/").content.decode()
    form = re.search(r'action="/staff/bookings/[^"]+/receipt/".*?</form>', page, re.S)
    assert form is not None
    fields = dict(re.findall(r'name="(request_id)" value="([^"]+)"', form.group(0)))
    tabs = [client_for(staff) for _ in range(10)]
    start = threading.Barrier(len(tabs))
    statuses: list[int] = []

    def press(tab: Client) -> None:
        start.wait()
        statuses.append(tab.post(f"/staff/bookings/{mine.id}/receipt/", fields).status_code)

    threads = [threading.Thread(target=press, args=(tab,)) for tab in tabs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [302] * 10
    assert r.xlen(ks.MAIL_OUTBOX.key()) == 1
    kinds = [e.kind for e in audit.booking_audit(client=r, booking_id=mine.id)]
    assert kinds.count("receipt") == 1
    # Another press of a new page is another mail.
    assert client_for(staff).post(f"/staff/bookings/{mine.id}/receipt/").status_code == 302
    assert r.xlen(ks.MAIL_OUTBOX.key()) == 2


def test_staff_booking_for_a_buyer_without_an_address_and_its_audit_line_in_chinese(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    data = {"request_id": "staff-book-request-02", "cls": "A", "room": "12",
            "date": ["2026-12-06"]}  # fmt: skip
    answer = client.post(f"/staff/people/{buyer.id}/book/", data, follow=True)
    page = answer.content.decode()
    assert "no confirmed email address: the receipt goes out once they confirm one" in page
    assert "the receipt with the code is on its way" not in page
    booking_id = answer.redirect_chain[-1][0].split("/")[3]
    detail = client.get(f"/staff/bookings/{booking_id}/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert f"由工作人员为 {buyer.person.username} 预订" in detail.content.decode()


def test_the_person_page_shows_their_hours_boxes_hold_and_waiting_lists(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:  # fmt: skip
    """Staff on the phone to a buyer see what the buyer sees: each booking's hours and boxes,
    the hold in hand and the waiting lists (a priority hold from a list was nowhere)."""
    from booking.domain.rules import hold_new_id
    from booking.engine.holds import booking_hold
    from booking.engine.waits import Wait, waits_join

    claim(r, request("C", hour_start=9, hour_end=11, boxes="4,5"), owner=str(buyer.id))
    booked(r, second_buyer, dates=(6,))
    held = booking_hold(
        client=r, owner_id=str(buyer.id), request=request("A", room=12, dates=(7,)),
        hold_id=hold_new_id(room=12), now=NOW,
    )  # fmt: skip
    assert held.ok
    assert waits_join(client=r, owner_id=str(buyer.id), waits=[Wait(7, "B", day(6), (8, 10))],
                      now=NOW) == ["ok"]  # fmt: skip
    page = client_for(staff).get(f"/staff/people/{buyer.id}/").content.decode()
    table = page.split('id="person-bookings"')[1].split("</table>")[0]
    assert "09:00–11:00" in table and "4, 5" in table
    listed = page.split('id="person-holds"')[1].split("</ul>")[0]
    assert "Hold: Class A, room 012 · 2026-12-07" in listed
    assert "Waiting list: Class B, room 007 · 2026-12-06 · 08:00–10:00 · waiting" in listed
    empty = client_for(staff).get(f"/staff/people/{second_buyer.id}/").content.decode()
    assert "None." in empty.split('id="person-holds"')[1].split("</ul>")[0]


def test_staff_pages_show_the_reference_and_a_reference_in_the_address_finds_the_booking(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    mine = booked(r, buyer)
    client = client_for(staff)
    for typed in (mine.reference, mine.reference.lower()):
        answer = client.get(f"/staff/bookings/{typed}/")
        assert answer.status_code == 302 and answer["Location"] == f"/staff/bookings/{mine.id}/"
    assert client.get("/staff/bookings/B-AAAA-AAAA/").status_code == 404
    log = client.get("/staff/audit/?kind=claim").content.decode()
    link = f'<a href="/staff/bookings/{mine.id}/" class="mono" title="{mine.id}">'
    assert f"{link}{mine.reference}</a>" in log
    detail = client.get(f"/staff/bookings/{mine.id}/").content.decode()
    assert f"{link}{mine.reference}</a>" in detail[detail.index('id="trail"') :]
