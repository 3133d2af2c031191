"""Moves and staff acting for a buyer pressed many times at once (two tabs, a double click, the
buyer and the desk together): the form's id makes them one; never a 500."""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Sequence

import redis
import time_machine
from django.test import Client

from booking.engine.bookings import booking_get, bookings_of
from tests.booking_support import NOW, claim, request
from tests.conftest import Someone


def post(tab: Client, path: str, form: dict[str, str]) -> int:
    return int(tab.post(path, form).status_code)


def at_once(presses: Sequence[Callable[[], int]]) -> list[int]:
    """Run every press in its own thread, released together; their status codes."""
    start = threading.Barrier(len(presses))
    statuses: list[int] = []

    def run(press: Callable[[], int]) -> None:
        start.wait()
        statuses.append(press())

    threads = [threading.Thread(target=run, args=(p,)) for p in presses]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(statuses) == len(presses), "a press raised"
    return statuses


def hidden(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]+)"', page)
    assert found is not None, name
    return found.group(1)


def test_ten_presses_of_one_move_form_and_the_desk_s_at_once_move_the_booking_once(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    with time_machine.travel(NOW, tick=False):
        made = claim(r, request("C", hour_start=8, hour_end=10, boxes=[3]), owner=str(buyer.id))
        assert made.booking is not None
        mine = f"/book/mine/{made.booking.id}/move/"
        desk = f"/staff/bookings/{made.booking.id}/move/"
        move_id = hidden(client_for(buyer).get(mine).content.decode(), "move_id")
        wanted = {"date": "2026-12-05", "hour_start": "9", "hour_end": "11", "boxes": "4"}
        other = {"date": "2026-12-06", "hour_start": "9", "hour_end": "11", "boxes": "5"}
        tabs = [client_for(buyer) for _ in range(10)]
        desks = [client_for(staff) for _ in range(3)]
        statuses = at_once(
            [functools.partial(post, t, mine, {**wanted, "move_id": move_id}) for t in tabs]
            + [functools.partial(post, d, desk, other) for d in desks]
        )
        assert all(s in (302, 409) for s in statuses), statuses
        (after,) = bookings_of(client=r, owner_id=str(buyer.id))
        moved = booking_get(client=r, booking_id=after.id)
        assert moved is not None and moved.status == "confirmed"
        assert (moved.dates[0].day, moved.boxes) in ((5, (4,)), (6, (5,))), moved
        # The old slot is free again, exactly one of the new ones is taken.
        again = claim(r, request("C", hour_start=8, hour_end=10, boxes=[3]))
        assert again.ok


def test_ten_presses_of_book_for_a_buyer_with_one_form_book_once(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    with time_machine.travel(NOW, tick=False):
        page = client_for(staff).get(f"/staff/people/{buyer.id}/").content.decode()
        form = {"cls": "A", "room": "12", "date": "2026-12-07",
                "request_id": hidden(page, "request_id")}  # fmt: skip
        tabs = [client_for(staff) for _ in range(10)]
        path = f"/staff/people/{buyer.id}/book/"
        statuses = at_once([functools.partial(post, t, path, form) for t in tabs])
        assert all(s == 302 for s in statuses), statuses
        assert len(bookings_of(client=r, owner_id=str(buyer.id))) == 1


def test_moves_of_one_booking_to_two_other_rooms_at_once_leave_it_in_one_room(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    """The buyer moves it to room 8 in five tabs while the desk moves it to room 9 in five: it
    ends in one room, its old slots and the loser's given back."""
    with time_machine.travel(NOW, tick=False):
        made = claim(r, request("C", hour_start=8, hour_end=10, boxes=[3]), owner=str(buyer.id))
        assert made.booking is not None
        old = made.booking.id
        to_8 = {"date": "2026-12-03", "hour_start": "8", "hour_end": "10", "boxes": "3",
                "room": "8"}  # fmt: skip
        to_9 = {**to_8, "room": "9"}
        presses = [
            functools.partial(post, client_for(buyer), f"/book/mine/{old}/move/", to_8)
            for _ in range(5)
        ] + [
            functools.partial(post, client_for(staff), f"/staff/bookings/{old}/move/", to_9)
            for _ in range(5)
        ]
        statuses = at_once(presses)
        assert all(s in (302, 409) for s in statuses), statuses
        (after,) = [
            b for b in bookings_of(client=r, owner_id=str(buyer.id)) if b.status == "confirmed"
        ]
        assert after.room in (8, 9), after
        # Every room but the booking's own takes the same slots again.
        for room in {7, 8, 9} - {after.room}:
            assert claim(r, request("C", room=room, hour_start=8, hour_end=10, boxes=[3])).ok
        assert not claim(r, request("C", room=after.room, hour_start=8, hour_end=10, boxes=[3])).ok
