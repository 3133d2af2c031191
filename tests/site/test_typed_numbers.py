"""One rule for a number read from a form or a query string (`strongroom.typed`): the digits
0-9 only. Full-width (a Chinese keyboard's) and Arabic-Indic digits, which int() and Django's
IntegerField read as numbers, are refused with the booking form's message, as the
form's other refusals are, and nothing is written."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client, override_settings

from booking.domain.records import Booking
from booking.engine.bookings import booking_get
from booking.engine.window import window_read
from tests.booking_support import NOW, claim, request, snapshot
from tests.conftest import Someone

FULL_WIDTH_2, ARABIC_INDIC_2 = "\uff12", "\u0662"
FULL_WIDTH_288, ARABIC_INDIC_288 = "\uff12\uff18\uff18", "\u0662\u0668\u0668"
FULL_WIDTH_31, ARABIC_INDIC_31 = "\uff13\uff11", "\u0663\u0661"
ROOM_REFUSAL = "The room must be a number from 001 to 300 (not “{}”)."
ROOM_REFUSAL_ZH = "房间号必须是 001 到 300 之间的数字（不是“{}”）。"


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def page(response: Any) -> str:
    return str(response.content.decode())


def booked(r: redis.Redis, someone: Someone) -> Booking:
    found = claim(r, request("C", hour_start=8, hour_end=10, boxes=[1]), owner=str(someone.id))
    assert found.booking is not None
    return found.booking


def move_form(client: Client, booking: Booking) -> dict[str, Any]:
    form = page(client.get(f"/book/mine/{booking.id}/move/"))
    move_id = form.split('name="move_id" value="')[1].split('"')[0]
    return {"move_id": move_id, "date": ["2026-12-05"], "hour_start": "8", "hour_end": "10",
            "room": "007", "boxes": "1"}  # fmt: skip


def test_the_hold_form_is_the_rule_the_others_follow(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(buyer)
    before = snapshot(r)
    for room in (FULL_WIDTH_2, ARABIC_INDIC_2):
        sent = {"cls": "A", "room": room, "date": "2026-12-05"}
        refused = client.post("/book/hold/", sent)
        assert refused.status_code == 400 and ROOM_REFUSAL.format(room) in page(refused)
    assert snapshot(r) == before


def test_the_claim_the_waiting_list_and_the_pickers_say_it_alike(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(buyer)
    before = snapshot(r)
    sent = {"cls": "A", "room": FULL_WIDTH_2, "date": "2026-12-05"}
    for path in ("/book/claim/", "/book/wait/"):
        refused = client.post(path, sent)
        assert refused.status_code == 400, path
        assert ROOM_REFUSAL.format(FULL_WIDTH_2) in page(refused), path
    assert snapshot(r) == before
    for path in ("/book/", "/book/wait/"):  # the pickers' query: read, the room dropped
        picked = client.get(path, {"cls": "A", "room": ARABIC_INDIC_2})
        assert ROOM_REFUSAL.format(ARABIC_INDIC_2) in page(picked), path


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("room", FULL_WIDTH_2), ("room", ARABIC_INDIC_2), ("room", "\uff10\uff10\uff12"),
        ("boxes", "\uff14"), ("boxes", "\u0664"), ("boxes", "\u0664-\u0666"),
        ("boxes", "\uff14\uff0d\uff16"),
    ],
)  # fmt: skip
def test_the_move_form_refuses_a_room_or_boxes_of_other_digits_and_moves_nothing(
    r: redis.Redis,
    buyer: Someone,
    client_for: Callable[[Someone], Client],
    field: str,
    value: str,
) -> None:
    mine = booked(r, buyer)
    client = client_for(buyer)
    data = move_form(client, mine) | {field: value}
    before = snapshot(r)
    refused = client.post(f"/book/mine/{mine.id}/move/", data)
    said = ROOM_REFUSAL.format(value) if field == "room" else "is not a box number (1 to 100)."
    assert refused.status_code == 400 and said in page(refused)
    assert snapshot(r) == before
    assert booking_get(client=r, booking_id=mine.id) == mine


def test_the_refusal_speaks_chinese(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    mine = booked(r, buyer)
    client = client_for(buyer)
    data = move_form(client, mine) | {"room": FULL_WIDTH_2}
    zh = client.post(f"/book/mine/{mine.id}/move/", data, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert zh.status_code == 400 and ROOM_REFUSAL_ZH.format(FULL_WIDTH_2) in page(zh)


@pytest.mark.parametrize("room", [FULL_WIDTH_288, ARABIC_INDIC_288])
def test_staff_book_for_refuses_a_room_of_other_digits_and_books_nothing(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
    room: str,
) -> None:
    data = {"request_id": "staff-book-request-digits", "cls": "A", "room": room,
            "date": ["2026-12-06"]}  # fmt: skip
    client = client_for(staff)
    before = snapshot(r)
    refused = client.post(f"/staff/people/{buyer.id}/book/", data)
    assert refused.status_code == 400 and ROOM_REFUSAL.format(room) in page(refused)
    assert snapshot(r) == before


@pytest.mark.parametrize("days", [FULL_WIDTH_31, ARABIC_INDIC_31, "\u0663\uff11"])
def test_the_sales_window_refuses_days_of_other_digits_and_keeps_the_window(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client], days: str
) -> None:
    with override_settings(
        STRONGROOM_SEASON_START=None, STRONGROOM_SEASON_END=None, STRONGROOM_SELL_DAYS=20
    ):
        kept, client = window_read(client=r), client_for(staff)
        before = snapshot(r)
        refused = client.post("/staff/window/set/", {"mode": "rolling", "days": days})
        assert refused.status_code == 400
        assert f"Days ahead (rolling) must be a number from 1 to 366 (not “{days}”)." in page(
            refused
        )
        assert snapshot(r) == before and window_read(client=r) == kept


CLOSE = {"rooms": "7", "first": "2026-12-10", "last": "2026-12-11", "hour_start": "",
         "hour_end": "", "reason": "safe under repair"}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"rooms": "\uff12\uff18\uff17"}, ROOM_REFUSAL.format("\uff12\uff18\uff17")),
        ({"rooms": "\u0662\u0668\u0667"}, ROOM_REFUSAL.format("\u0662\u0668\u0667")),
        ({"rooms": "5-\uff12\uff18\uff17"}, ROOM_REFUSAL.format("5-\uff12\uff18\uff17")),
        ({"hour_start": "\uff19", "hour_end": "12"},
         "From hour (empty: whole days) must be a number from 0 to 23 (not “\uff19”)."),
    ],
)  # fmt: skip
def test_closures_refuse_rooms_and_hours_of_other_digits_and_close_nothing(
    r: redis.Redis,
    staff: Someone,
    client_for: Callable[[Someone], Client],
    change: dict[str, str],
    said: str,
) -> None:
    client = client_for(staff)
    before = snapshot(r)
    for step in ("check", "close"):
        refused = client.post(f"/staff/closures/{step}/", CLOSE | change)
        assert refused.status_code == 400, step
        assert said in page(refused), step
    assert snapshot(r) == before


def test_staff_lists_refuse_numbers_of_other_digits_in_their_queries(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    listed = page(client.get("/staff/bookings/", {"room": FULL_WIDTH_2}))
    assert ROOM_REFUSAL.format(FULL_WIDTH_2) in listed
    mapped = page(client.get("/staff/occupancy/", {"date": "2026-12-03", "cls": "A",
                                                  "floor": ARABIC_INDIC_2}))  # fmt: skip
    assert f"Floor must be a number from 1 to 999 (not “{ARABIC_INDIC_2}”)." in mapped


def test_the_kiosk_refuses_a_room_of_other_digits_and_counts_nothing(
    r: redis.Redis, buyer: Someone
) -> None:
    mine = booked(r, buyer)
    code = mine.pickup_code()
    before = snapshot(r)
    with time_machine.travel(dt.datetime(2026, 12, 3, 9, 0, tzinfo=NOW.tzinfo), tick=False):
        for room in ("\uff10\uff10\uff17", "\u0660\u0660\u0667"):
            refused = Client().post("/book/pickup/", {"room": room, "code": code})
            assert ROOM_REFUSAL.format(room) in page(refused), room
    assert snapshot(r) == before  # not opened, and no wrong code counted


def test_the_desk_reads_no_room_of_other_digits(
    staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    for room in (FULL_WIDTH_2, ARABIC_INDIC_2):
        desk = page(client.get("/staff/desk/", {"from": room}))
        assert f"Could not read “{room}”" in desk and 'value="001"' in desk, room
