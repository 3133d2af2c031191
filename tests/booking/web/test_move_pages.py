"""Moving a booking through the pages: the buyer's form (no JavaScript needed), staff's form,
refusals that change nothing, the mail the buyer gets, Chinese."""

from __future__ import annotations

import datetime as dt
import email
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client
from django.utils import timezone

from booking.domain.codes import code_display
from booking.domain.records import Booking
from booking.engine.bookings import booking_get
from booking.engine.cancel import booking_cancel
from strongroom.outbox_delivery import outbox_send
from tests.booking_support import NOW, claim, day, request
from tests.conftest import Someone
from tests.mail_support import mail_to_files, with_address


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def html(response: Any) -> str:
    return response.content.decode()


def hidden(page: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]+)"', page)
    assert match, f"no hidden {name}"
    return match.group(1)


def booked(r: redis.Redis, someone: Someone, **extra: Any) -> Booking:
    found = claim(r, request("B", hour_start=8, hour_end=10, **extra), owner=str(someone.id))
    assert found.booking is not None
    return found.booking


def test_the_buyer_moves_a_booking_to_other_hours_and_sees_the_new_code(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    mine = booked(r, buyer)
    client = client_for(buyer)
    listed = html(client.get("/book/mine/"))
    assert f'href="/book/mine/{mine.id}/move/"' in listed
    form = html(client.get(f"/book/mine/{mine.id}/move/"))
    assert 'name="date" type="date" required value="2026-12-03"' in form
    # Every hour reads as one, the booking's own selected (a list of ":00" was unusable).
    assert '<option value="8" selected>08:00</option>' in form
    assert '<option value="10" selected>10:00</option>' in form and ">23:00<" in form
    data = {"move_id": hidden(form, "move_id"), "date": ["2026-12-05"], "hour_start": "14",
            "hour_end": "16"}  # fmt: skip
    answer = client.post(f"/book/mine/{mine.id}/move/", data)
    assert answer.status_code == 302 and answer["Location"] == f"/book/done/{mine.id}/"
    done = html(client.get(answer["Location"]))
    moved = booking_get(client=r, booking_id=mine.id)
    assert moved is not None and moved.dates == (day(5),) and moved.hours == (14, 16)
    assert "The booking is moved" in done and code_display(moved.pickup_code()) in done
    assert code_display(mine.pickup_code()) not in done
    # A double press of the same form answers "moved" again, and does not move twice.
    again = client.post(f"/book/mine/{mine.id}/move/", data)
    assert again.status_code == 302
    assert booking_get(client=r, booking_id=mine.id).seq == 1  # type: ignore[union-attr]


def test_the_move_form_bounds_its_days_links_the_map_and_takes_box_ranges(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    """Not blind: its days can only be picked from tomorrow to the season's last, it leads to
    the map of the booking's class and time (what is free where), and boxes may be typed as
    a range ("6-8" is three boxes) as well as one by one."""
    found = claim(r, request("C", hour_start=8, hour_end=10, boxes=[1, 2, 3]), owner=str(buyer.id))
    mine = found.booking
    assert mine is not None
    client = client_for(buyer)
    form = html(client.get(f"/book/mine/{mine.id}/move/"))
    first = max(timezone.localdate() + dt.timedelta(days=1), dt.date(2026, 12, 1))  # the season's
    assert f'min="{first.isoformat()}" max="2026-12-31"' in form
    assert 'href="/book/find/?cls=C&amp;date=2026-12-03&amp;start=8&amp;end=10"' in form
    data = {"move_id": hidden(form, "move_id"), "date": ["2026-12-05"], "hour_start": "8",
            "hour_end": "10", "boxes": "6-8"}  # fmt: skip
    answer = client.post(f"/book/mine/{mine.id}/move/", data)
    assert answer.status_code == 302, html(answer)[:2000]
    moved = booking_get(client=r, booking_id=mine.id)
    assert moved is not None and moved.boxes == (6, 7, 8) and moved.dates == (day(5),)
    odd = client.post(f"/book/mine/{mine.id}/move/", {**data, "boxes": "9-7, 200"})
    assert odd.status_code == 400
    twice = client.post(f"/book/mine/{mine.id}/move/", {**data, "date": ["2026-12-06"] * 2})
    assert twice.status_code == 400 and "The same day is there twice" in html(twice)
    assert booking_get(client=r, booking_id=mine.id).boxes == (6, 7, 8)  # type: ignore[union-attr]


def test_a_move_typed_with_a_chinese_keyboard_reads_its_comma_and_dash_not_its_digits(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    """A full-width comma and dash (a Chinese keyboard) between boxes read as the plain ones;
    full-width digits are no number, as on every form (tests/site/test_typed_numbers.py)."""
    found = claim(r, request("C", hour_start=8, hour_end=10, boxes=[1]), owner=str(buyer.id))
    mine = found.booking
    assert mine is not None
    client = client_for(buyer)
    form = html(client.get(f"/book/mine/{mine.id}/move/"))
    data = {"move_id": hidden(form, "move_id"), "date": ["2026-12-05"], "hour_start": "8",
            "hour_end": "10", "room": "\uff10\uff10\uff19", "boxes": "4\uff0c6\uff0d8"}  # fmt: skip
    refused = client.post(f"/book/mine/{mine.id}/move/", data)
    assert refused.status_code == 400
    assert "The room must be a number from 001 to 300" in html(refused)
    answer = client.post(f"/book/mine/{mine.id}/move/", {**data, "room": "009"})
    assert answer.status_code == 302, html(answer)[:2000]
    moved = booking_get(client=r, booking_id=answer["Location"].split("/")[-2])
    assert moved is not None and moved.room == 9 and moved.boxes == (4, 6, 7, 8)


def test_a_move_into_a_taken_slot_says_so_and_changes_nothing(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    mine = booked(r, buyer)
    booked(r, second_buyer, dates=(4,))
    client = client_for(buyer)
    data = {"date": ["2026-12-04"], "hour_start": "9", "hour_end": "11"}
    answer = client.post(f"/book/mine/{mine.id}/move/", data)
    page = html(answer)
    assert answer.status_code == 409 and "Not moved: the booking is as it was." in page
    assert "Not free:" in page and "09:00" in page
    assert booking_get(client=r, booking_id=mine.id) == mine
    # The buyer's choice stays in the form.
    assert 'value="2026-12-04"' in page and '<option value="9" selected>' in page


@pytest.mark.parametrize(
    "data",
    [
        {"date": ["2026-11-21"], "hour_start": "8", "hour_end": "10"},  # today: too late
        {"date": ["2026-12-04", "2026-12-05"], "hour_start": "8", "hour_end": "10"},
        {"date": ["not a day"], "hour_start": "8", "hour_end": "10"},
        {"date": ["2026-12-04"], "hour_start": "10", "hour_end": "8"},
        {"date": ["2026-12-04"], "hour_start": "🦄", "hour_end": "x" * 5000},
        {},
    ],
)
def test_bad_move_input_is_refused_with_a_message_and_nothing_written(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client], data: dict[str, Any]
) -> None:
    mine = booked(r, buyer)
    answer = client_for(buyer).post(f"/book/mine/{mine.id}/move/", data)
    assert answer.status_code in (400, 409)
    assert "Not moved" in html(answer)
    assert booking_get(client=r, booking_id=mine.id) == mine


def test_other_people_and_anonymous_visitors_cannot_move_a_booking(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
    client: Client,
) -> None:
    mine = booked(r, buyer)
    data = {"date": ["2026-12-05"], "hour_start": "14", "hour_end": "16"}
    assert client_for(second_buyer).post(f"/book/mine/{mine.id}/move/", data).status_code == 404
    assert client_for(second_buyer).get(f"/book/mine/{mine.id}/move/").status_code == 404
    assert client.post(f"/book/mine/{mine.id}/move/", data).status_code == 302  # to log in
    csrf = Client(enforce_csrf_checks=True)
    csrf.cookies = client_for(buyer).cookies
    assert csrf.post(f"/book/mine/{mine.id}/move/", data).status_code == 403
    assert booking_get(client=r, booking_id=mine.id) == mine


def test_the_move_page_speaks_chinese(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    mine = booked(r, buyer)
    page = html(
        client_for(buyer).get(f"/book/mine/{mine.id}/move/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    )
    assert "改期" in page and "Move the booking" not in page


def test_the_buyer_gets_a_mail_with_the_new_code_and_the_same_calendar_uids(
    r: redis.Redis,
    buyer: Someone,
    client_for: Callable[[Someone], Client],
    settings: Any,
    tmp_path: Path,
) -> None:
    mail_to_files(settings, tmp_path)
    with_address(r, buyer, "anna@example.test", "zh-hans")
    mine = booked(r, buyer)
    outbox_send(client=r)  # the receipt
    data = {"date": ["2026-12-05"], "hour_start": "14", "hour_end": "16"}
    assert client_for(buyer).post(f"/book/mine/{mine.id}/move/", data).status_code == 302
    assert outbox_send(client=r).sent == 1

    def subject_of(message: email.message.Message) -> str:
        return str(email.header.make_header(email.header.decode_header(message["Subject"])))

    # The files' names do not follow the order of sending: tell the two mails by their subject.
    mails = [email.message_from_bytes(p.read_bytes()) for p in tmp_path.glob("*.eml")]
    assert len(mails) == 2
    moved_mail = next(m for m in mails if subject_of(m).startswith("已改期"))
    receipt = next(m for m in mails if m is not moved_mail)
    assert mine.reference in subject_of(moved_mail)
    moved = booking_get(client=r, booking_id=mine.id)
    assert moved is not None
    body = next(p for p in moved_mail.walk() if p.get_content_type() == "text/plain")
    text = body.get_payload(decode=True).decode()  # type: ignore[union-attr]
    assert code_display(moved.pickup_code()) in text and "2026年12月5日" in text

    def ics(message: email.message.Message) -> str:
        part = next(p for p in message.walk() if p.get_content_type() == "text/calendar")
        return part.get_payload(decode=True).decode()  # type: ignore[union-attr]

    uid = re.search(r"UID:[^\r\n]+", ics(receipt))
    assert uid is not None and uid.group(0) in ics(moved_mail)
    assert "SEQUENCE:1" in ics(moved_mail) and "SEQUENCE:0" in ics(receipt)


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_cancelled_booking_s_move_page_offers_no_form(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
    language: str,
) -> None:
    """Buyer and staff alike: a booking no longer confirmed says so, with no form to send."""
    mine = booked(r, buyer)
    done = booking_cancel(
        client=r, booking_id=mine.id, actor_id=str(buyer.id), actor_is_staff=False, now=NOW
    )
    assert done.outcome == "cancelled"
    word = "nothing to move" if language == "en" else "没有可改期的内容"
    for someone, path in ((buyer, f"/book/mine/{mine.id}/move/"),
                          (staff, f"/staff/bookings/{mine.id}/move/")):  # fmt: skip
        answer = client_for(someone).get(path, HTTP_ACCEPT_LANGUAGE=language)
        assert answer.status_code == 200, path
        assert word in html(answer) and 'name="move_id"' not in html(answer), path


def test_an_old_move_form_sent_again_after_the_booking_moved_on_says_so_and_writes_nothing(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    """Room 60 -> 61 (form X), then 61 -> 62 (form Y); form X sent again (Back and resubmit,
    or a second tab) named room 61's record, now form Y's: it was a server error."""
    from tests.booking_support import snapshot

    mine = claim(r, request("A", room=60, dates=(18,)), owner=str(buyer.id)).booking
    assert mine is not None
    client = client_for(buyer)
    first = {"move_id": hidden(html(client.get(f"/book/mine/{mine.id}/move/")), "move_id"),
             "room": "61", "date": ["2026-12-18"]}  # fmt: skip
    to_61 = client.post(f"/book/mine/{mine.id}/move/", first)["Location"].split("/")[3]
    second = {"move_id": hidden(html(client.get(f"/book/mine/{to_61}/move/")), "move_id"),
              "room": "62", "date": ["2026-12-18"]}  # fmt: skip
    assert client.post(f"/book/mine/{to_61}/move/", second).status_code == 302
    before = snapshot(r)
    again = client.post(f"/book/mine/{mine.id}/move/", first)
    assert again.status_code == 409
    assert "This booking was moved meanwhile" in html(again)
    assert snapshot(r) == before


@pytest.mark.parametrize("staff_form", [False, True], ids=["buyer", "staff"])
def test_a_move_whose_day_stops_being_bookable_at_the_call_is_refused_not_a_500(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client],
    monkeypatch: pytest.MonkeyPatch, staff_form: bool,
) -> None:  # fmt: skip
    """The form is read before midnight and the function called after it (the call's first
    bookable day is the 6th): the store refuses the 5th, the page says why, nothing moves."""
    from booking.domain.rules import calendar_day
    from booking.engine import moves

    mine = booked(r, buyer)
    monkeypatch.setattr(moves, "first_bookable_day", lambda now=None: calendar_day(day(6)))
    client = client_for(staff if staff_form else buyer)
    path = f"/staff/bookings/{mine.id}/move/" if staff_form else f"/book/mine/{mine.id}/move/"
    form = html(client.get(path))
    data = {"move_id": hidden(form, "move_id"), "date": ["2026-12-05"], "hour_start": "14",
            "hour_end": "16"}  # fmt: skip
    answer = client.post(path, data)
    assert answer.status_code == 400 and "Dec. 5, 2026" in html(answer)
    assert booking_get(client=r, booking_id=mine.id) == mine
