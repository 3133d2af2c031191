"""My bookings lists a buyer's live upcoming bookings before the cancelled ones, across pages:
twenty cancelled bookings of earlier days never push a confirmed one off the first page."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.records import Booking
from booking.engine.bookings import booking_get, bookings_page
from booking.engine.cancel import booking_cancel
from booking.web.mine import MINE_PAGE_SIZE
from tests.booking_support import NOW, booked_id, day
from tests.conftest import Someone


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def _book(r: redis.Redis, someone: Someone, room: int, n: int) -> Booking:
    booking = booking_get(
        client=r, booking_id=booked_id(r, someone, cls="A", room=room, dates=[day(n)])
    )
    assert booking is not None
    return booking


def _cancelled_then_one(r: redis.Redis, buyer: Someone) -> Booking:
    """A page's worth of cancelled bookings on December 10, then one confirmed on the 20th."""
    for room in range(100, 100 + MINE_PAGE_SIZE):
        booking = _book(r, buyer, room, 10)
        assert booking_cancel(
            client=r, booking_id=booking.id, actor_id=str(buyer.id), actor_is_staff=False
        ).ok
    return _book(r, buyer, 150, 20)


def test_a_confirmed_booking_is_on_the_first_page_before_cancelled_ones(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    kept = _cancelled_then_one(r, buyer)
    page = client_for(buyer).get("/book/mine/").content.decode()
    upcoming = page.partition("Earlier and cancelled")[0]
    assert kept.reference in upcoming
    assert "No upcoming bookings." not in upcoming
    assert "Page 1 of 2" in page or "1 of 2" in page
    second = client_for(buyer).get("/book/mine/?page=2").content.decode()
    assert kept.reference not in second and "Earlier and cancelled" in second


def test_every_booking_is_on_exactly_one_page(r: redis.Redis, buyer: Someone) -> None:
    kept = _cancelled_then_one(r, buyer)
    later = _book(r, buyer, 151, 25)
    seen: list[str] = []
    for offset in range(0, 30, 7):
        page = bookings_page(
            client=r, owner_id=str(buyer.id), today=NOW.date(), limit=7, offset=offset
        )
        seen += [b.id for b in page.bookings]
    assert len(seen) == len(set(seen)) == MINE_PAGE_SIZE + 2
    # The live ones first, by last day; then the cancelled ones.
    assert seen[:2] == [kept.id, later.id]
