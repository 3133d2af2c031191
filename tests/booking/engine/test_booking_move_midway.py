"""A move to another room cut off after the old room decided (the mover died before the new
room confirmed): the first read of the booking finishes the move, so it is its owner's and
staff's to see, under either id, without waiting for the recovery (30 s on)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.records import Booking
from booking.engine import moves_rooms
from booking.engine.bookings import booking_get
from booking.engine.moves import booking_move
from tests.booking_support import NOW, claim, request
from tests.conftest import Someone


def _moved_half_way(r: redis.Redis, buyer: Someone, monkeypatch: pytest.MonkeyPatch) -> Booking:
    """A booking of room 7 whose move to room 9 was cut off after the old room decided (the
    mover died before the new room's commit)."""

    def died(*args: object, **kwargs: object) -> None:
        raise ConnectionError("the mover died here")

    made = claim(r, request("C", hour_start=8, hour_end=10, boxes=[3]), owner=str(buyer.id))
    assert made.booking is not None
    monkeypatch.setattr(moves_rooms, "_move_commit", died)
    with pytest.raises(ConnectionError):
        booking_move(
            client=r, booking_id=made.booking.id,
            request=request("C", room=9, hour_start=8, hour_end=10, boxes=[3]),
            actor_id=str(buyer.id), actor_is_staff=False, move_id="m" * 20,
        )  # fmt: skip
    monkeypatch.undo()  # the mover is gone; whoever reads the booking now finishes it
    return made.booking


def test_a_move_cut_off_after_the_old_room_decided_leaves_the_booking_visible(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with time_machine.travel(NOW, tick=False):
        made = _moved_half_way(r, buyer, monkeypatch)
        found = booking_get(client=r, booking_id=made.id)
        assert found is not None and found.room == 9 and found.status == "confirmed", found
        assert found.reference == made.reference
        page = client_for(buyer).get(f"/book/done/{made.id}/")
        assert page.status_code == 200
        listed = client_for(buyer).get("/book/mine/")
        assert made.reference in listed.content.decode()
        desk = client_for(staff).get(f"/staff/bookings/{made.id}/")
        assert desk.status_code == 200 and made.reference in desk.content.decode()


def test_a_reader_whose_finish_of_a_move_another_did_first_still_finds_the_booking(
    r: redis.Redis, buyer: Someone, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two readers find the same move half done; the other one's commit lands first, this
    one's finish answers None: the booking is read as it now is, not missing (the staff move
    page answered 404 in a race of ten moves on a cluster)."""
    from booking.engine import bookings

    with time_machine.travel(NOW, tick=False):
        made = _moved_half_way(r, buyer, monkeypatch)
        real_finish = bookings.move_finish

        def finished_by_another(**kwargs: object) -> None:
            real_finish(**kwargs)  # type: ignore[arg-type]  # the other reader's commit
            return None  # and this one's finds nothing left to do

        monkeypatch.setattr(bookings, "move_finish", finished_by_another)
        found = booking_get(client=r, booking_id=made.id)
        assert found is not None and found.room == 9 and found.status == "confirmed", found
