"""A value too long for its field is refused with a message naming it, never cut to fit and
then acted on: staff booking for a buyer, a move, the kiosk, the desk."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.engine.bookings import booking_get, bookings_of
from tests.booking_support import NOW, claim, request, snapshot
from tests.conftest import Someone

BOXES_1_TO_100 = ",".join(f"{n:04d}" for n in range(1, 101))  # 499 characters, every box


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def _unwritten(r: redis.Redis) -> dict[str, object]:
    return {k: v for k, v in snapshot(r).items() if "session" not in k and "visit" not in k}


def _staff_books(client: Client, buyer: Someone, **fields: Any) -> str:
    """What the staff page says after booking for `buyer` with `fields`."""
    data = {"cls": "C", "room": "9", "date": ["2026-12-05"], "hour_start": "8", "hour_end": "9"}
    answer = client.post(f"/staff/people/{buyer.id}/book/", {**data, **fields})
    if answer.status_code == 400:  # refused: the form again, with why
        return str(answer.content.decode())
    assert answer.status_code == 302
    return str(client.get(answer["Location"]).content.decode())


def test_staff_booking_takes_every_box_typed_or_refuses_what_is_too_much(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    before = _unwritten(r)
    for fields, says in (
        ({"date": [f"2026-12-{d:02d}" for d in range(1, 29)] * 2}, "At most 31 dates"),
        ({"date": ["2026-12-06          garbage"]}, "is not a date"),
        ({"cls": "Axx"}, "“Axx”"),
        ({"room": "00000010junk"}, "“00000010junk”"),
        ({"boxes": BOXES_1_TO_100 + ",0101"}, "At most 100 boxes"),
        ({"hour_start": "8" + " " * 60}, "far too long"),
    ):
        page = _staff_books(client, buyer, **fields)
        assert says in page, (fields, says)
        assert "Booked" not in page
        assert _unwritten(r) == before, fields
    assert "Booked" in _staff_books(client, buyer, boxes=BOXES_1_TO_100)
    (made,) = bookings_of(client=r, owner_id=str(buyer.id))
    assert made.boxes == tuple(range(1, 101))


def test_a_move_takes_every_box_typed(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    mine = claim(r, request("C", hour_start=8, hour_end=9, boxes=[1]), owner=str(buyer.id))
    assert mine.booking is not None
    client = client_for(buyer)
    data = {"date": ["2026-12-05"], "hour_start": "9", "hour_end": "10", "boxes": BOXES_1_TO_100}
    answer = client.post(f"/book/mine/{mine.booking.id}/move/", data)
    assert answer.status_code == 302
    moved = booking_get(client=r, booking_id=mine.booking.id)
    assert moved is not None and moved.boxes == tuple(range(1, 101))


def test_the_kiosk_does_not_read_a_room_out_of_a_longer_text(r: redis.Redis) -> None:
    answer = Client().post("/book/pickup/", {"room": "00000010junk", "code": "ABCDE-FGHJK"})
    page = answer.content.decode()
    assert "The room must be a number from 001 to 300 (not “00000010junk”)." in page


def test_the_desk_refuses_a_day_with_more_after_it(
    staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    page = client_for(staff).get("/staff/desk/", {"day": "2026-12-06garbage"}).content.decode()
    assert "“2026-12-06garbage”" in page
