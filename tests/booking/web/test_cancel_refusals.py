"""Why a cancel is refused, as the POST of a stale form says it (/book/mine/<id>/cancel/): the
same words as the page's GET for a booking whose first day has come, collected days or not;
"has been collected" only for a booking that is collected."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.records import Booking
from booking.engine.pickup import booking_pickup
from tests.booking_support import SHANGHAI, claim, request

STARTED = {
    "en": "Bookings can be cancelled only before their first day; ask the staff.",
    "zh-hans": "预订只能在首日之前取消；请联系工作人员。",
}
COLLECTED = {"en": "has been collected and can no longer be cancelled", "zh-hans": "此预订已取件"}
PARTLY = {
    "en": "Some of its days are collected already: it can no longer be cancelled.",
    "zh-hans": "部分日期已经取件：无法再取消。",
}


def at(day_number: int, hour: int) -> dt.datetime:
    return dt.datetime(2026, 12, day_number, hour, tzinfo=SHANGHAI)


def collected_on(r: redis.Redis, booking: Booking, day_number: int) -> None:
    assert booking_pickup(
        client=r, room=booking.room, code=booking.pickup_code(), now=at(day_number, 9)
    ).ok


def booked(r: redis.Redis, someone: Any, dates: tuple[int, ...]) -> Booking:
    made = claim(r, request("A", dates=dates), owner=str(someone.id)).booking
    assert made is not None
    return made


def cancel_said(client: Client, path: str, language: str, **form: str) -> str:
    """The page after one press of a cancel form (its message in the language of the press)."""
    answer = client.post(path, form, HTTP_ACCEPT_LANGUAGE=language)
    assert answer.status_code == 302
    return client.get(answer["Location"], HTTP_ACCEPT_LANGUAGE=language).content.decode()


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_stale_cancel_of_a_started_booking_with_its_first_day_collected_says_it_has_started(
    r: redis.Redis, client_for: Any, buyer: Any, language: str
) -> None:
    booking = booked(r, buyer, dates=(3, 4))
    collected_on(r, booking, 3)
    client = client_for(buyer)
    with time_machine.travel(at(3, 10), tick=False):
        page = client.get(f"/book/mine/{booking.id}/cancel/", HTTP_ACCEPT_LANGUAGE=language)
        assert STARTED[language] in page.content.decode()
        said = cancel_said(
            client, f"/book/mine/{booking.id}/cancel/", language, request_id="a" * 32
        )
    assert STARTED[language] in said
    assert COLLECTED[language] not in said


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_cancel_of_a_collected_booking_still_says_it_is_collected(
    r: redis.Redis, client_for: Any, buyer: Any, language: str
) -> None:
    booking = booked(r, buyer, dates=(3,))
    collected_on(r, booking, 3)
    with time_machine.travel(at(3, 10), tick=False):
        said = cancel_said(client_for(buyer), f"/book/mine/{booking.id}/cancel/", language)
    assert COLLECTED[language] in said


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_staff_cancelling_a_partly_collected_booking_are_told_some_days_are_collected(
    r: redis.Redis, client_for: Any, buyer: Any, staff: Any, language: str
) -> None:
    booking = booked(r, buyer, dates=(3, 4))
    collected_on(r, booking, 3)
    with time_machine.travel(at(3, 10), tick=False):
        said = cancel_said(
            client_for(staff), f"/staff/bookings/{booking.id}/cancel/", language, reason="leak"
        )
    assert PARTLY[language] in said
    assert COLLECTED[language] not in said
