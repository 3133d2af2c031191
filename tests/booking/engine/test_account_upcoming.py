"""The account page's next bookings (booking/engine/owners.py `bookings_upcoming`): ten records
read and parsed to show ten; more only when cancelled ones were among them."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from booking.domain import records
from booking.engine import indexes
from booking.engine.cancel import booking_cancel
from booking.engine.owners import ACCOUNT_UPCOMING, bookings_upcoming
from strongroom.store import round_trips
from tests.booking_support import BUYER, NOW, claim, request


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the booking records parsed (the parser itself runs)."""
    seen: list[str] = []

    def counted(data: dict[str, str]) -> Any:
        seen.append(data.get("id", ""))
        return records.booking_from_hash(data)

    monkeypatch.setattr(indexes, "booking_from_hash", counted)
    return seen


def twelve_bookings(r: redis.Redis) -> list[Any]:
    made = [claim(r, request("A", room=7, dates=(n,))).booking for n in range(5, 17)]
    assert all(made)
    return made


def test_the_next_ten_bookings_are_ten_records_read_and_parsed(
    r: redis.Redis, parsed: list[str]
) -> None:
    made = twelve_bookings(r)
    with round_trips() as trips:
        shown = bookings_upcoming(client=r, owner_id=BUYER, now=NOW)
    assert [b.id for b in shown] == [b.id for b in made[:ACCOUNT_UPCOMING]]
    assert len(parsed) == ACCOUNT_UPCOMING and trips.count == 2


def test_cancelled_bookings_among_the_next_ten_are_replaced_by_the_following_ones(
    r: redis.Redis, parsed: list[str]
) -> None:
    made = twelve_bookings(r)
    for booking in made[:2]:
        booking_cancel(client=r, booking_id=booking.id, actor_id=BUYER, actor_is_staff=False,
                       now=NOW)  # fmt: skip
    parsed.clear()
    with round_trips() as trips:
        shown = bookings_upcoming(client=r, owner_id=BUYER, now=NOW)
    assert [b.id for b in shown] == [b.id for b in made[2:12]]
    assert trips.count <= 3
