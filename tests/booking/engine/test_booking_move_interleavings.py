"""Cross-room moves interleaved with what else happens to a booking, its rooms and its owner: a
second move aborted by the recovery while the first one's step 2 is on its way, a move of a
record that is only a move's pending half, an account deleted mid-move, a room closed while a
move into it is under way, a waiter deleted while their priority hold stands."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis
import time_machine

from booking.domain.keys import RoomKeys
from booking.domain.records import Booking
from booking.engine import moves_rooms
from booking.engine.bookings import booking_get
from booking.engine.moves import booking_move
from booking.engine.results import MoveResult
from tests.booking_support import BUYER, NOW, claim, day, free_hours, request


def booked(r: redis.Redis, room: int = 7, owner: str = BUYER) -> Booking:
    made = claim(r, request("B", room=room, hour_start=8, hour_end=10), owner=owner)
    assert made.booking is not None
    return made.booking


def move(r: redis.Redis, booking_id: str, room: int, move_id: str, **to: Any) -> MoveResult:
    hours = {"hour_start": 8, "hour_end": 10, **to}
    with time_machine.travel(NOW, tick=False):
        return booking_move(
            client=r, booking_id=booking_id, request=request("B", room=room, **hours),
            actor_id=BUYER, actor_is_staff=False, move_id=move_id,
        )  # fmt: skip


@contextmanager
def calls_replaced(
    monkeypatch: pytest.MonkeyPatch, replace: Callable[[str, Callable[[], Any]], Any]
) -> Iterator[None]:
    """The cross-room move's function calls go through `replace(name, call)` (to stall or
    fail a step); put back at the end."""
    real = moves_rooms.durable_fcall

    def fcall(client: redis.Redis, name: str, *args: Any, **kwargs: Any) -> Any:
        return replace(name, lambda: real(client, name, *args, **kwargs))

    monkeypatch.setattr(moves_rooms, "durable_fcall", fcall)
    try:
        yield
    finally:
        monkeypatch.setattr(moves_rooms, "durable_fcall", real)


def died_after_step_2(r: redis.Redis, monkeypatch: pytest.MonkeyPatch, booking: Booking) -> str:
    """Move `booking` to room 9; the mover dies after the old room decided. The pending id."""

    def replace(name: str, call: Callable[[], Any]) -> Any:
        if name == "booking_move_commit":
            raise ConnectionError("the mover dies after step 2")
        return call()

    with calls_replaced(monkeypatch, replace), pytest.raises(ConnectionError):
        move(r, booking.id, 9, "m" * 20)
    pending = moves_rooms.moved_id("m" * 20, 9)
    assert r.hget(RoomKeys(9).record(pending), "status") == "pending"
    return pending


def closed_while_moving(
    r: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    booking: Booking,
    step: str,
    closure: Any,
    *,
    mover_now: dt.datetime = NOW,
) -> tuple[MoveResult, Any]:
    """Move `booking` to room 9 (8:00-10:00 on day 3, the mover's clock at `mover_now`);
    while the mover waits before its function `step`, staff write `closure`. The mover's
    answer and the closure as written."""
    from booking.engine.closures import closure_add

    stall, stalled = threading.Event(), threading.Event()

    def replace(name: str, call: Callable[[], Any]) -> Any:
        if name == step and threading.current_thread().name == "mover":
            stalled.set()
            stall.wait(10)
        return call()

    answers: list[MoveResult] = []

    def mover() -> None:
        wanted = request("B", room=9, hour_start=8, hour_end=10)
        answers.append(booking_move(client=r, booking_id=booking.id, request=wanted,
                                    actor_id=BUYER, actor_is_staff=False, now=mover_now,
                                    move_id="m" * 20))  # fmt: skip

    with calls_replaced(monkeypatch, replace):
        thread = threading.Thread(target=mover, name="mover")
        thread.start()
        assert stalled.wait(10)
        with time_machine.travel(NOW, tick=False):
            written = closure_add(client=r, actor_id="900", now=NOW, closure=closure)
        stall.set()
        thread.join()
    return answers[0], written


def test_a_late_step_two_after_two_aborted_moves_is_refused(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two moves of one booking (two tabs) stop after step 1: the first mover stalls, the
    second dies. The recovery aborts both; the first one's step 2 arrives then. Each abort
    must stay fenced off, or the old room gives its slots up for a record that is gone."""
    mine = booked(r)
    stall, stalled = threading.Event(), threading.Event()

    def replace(name: str, call: Callable[[], Any]) -> Any:
        who = threading.current_thread().name
        if name == "booking_move_out" and who == "first":
            stalled.set()
            stall.wait(10)
        if name == "booking_move_out" and who == "second":
            raise ConnectionError("the second mover dies after its step 1")
        return call()

    answers: dict[str, Any] = {}

    def mover(room: int, move_id: str) -> None:
        try:
            answers[move_id] = move(r, mine.id, room, move_id)
        except ConnectionError as died:
            answers[move_id] = died

    with calls_replaced(monkeypatch, replace):
        first = threading.Thread(target=mover, args=(9, "1" * 20), name="first")
        first.start()
        assert stalled.wait(10)
        second = threading.Thread(target=mover, args=(11, "2" * 20), name="second")
        second.start()
        second.join()
        later = NOW + dt.timedelta(seconds=31)
        assert moves_rooms.moves_recover(client=r, rooms=[9, 11], now=later) == 2
        stall.set()
        first.join()
    assert not answers["1" * 20].ok
    found = booking_get(client=r, booking_id=mine.id)
    assert found is not None and found.status == "confirmed" and found.room == 7
    assert not {8, 9} & set(free_hours(client=r, room=7, date=day(3), cls="B"))
    for room in (9, 11):
        assert {8, 9} <= set(free_hours(client=r, room=room, date=day(3), cls="B"))


def test_the_pending_half_of_a_move_is_nobody_s_to_move(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = booked(r)
    pending = died_after_step_2(r, monkeypatch, mine)
    for room in (9, 12):  # in its room, and to another
        refused = move(r, pending, room, "n" * 20, hour_start=12, hour_end=14)
        assert refused.outcome == "not_found", refused
    assert r.hget(RoomKeys(9).record(pending), "status") == "pending"
    found = booking_get(client=r, booking_id=mine.id)  # finishes the move
    assert found is not None and found.status == "confirmed" and found.room == 9


def test_a_deleted_waiter_s_priority_hold_frees_the_slot_for_everyone(r: redis.Redis) -> None:
    from booking.domain.rules import booking_new_id
    from booking.engine.cancel import booking_cancel
    from booking.engine.claims import booking_claim
    from booking.engine.owners import owner_forget
    from booking.engine.waits import Wait, wait_join

    req = request("B", room=7, dates=(3,), hour_start=8, hour_end=10)
    with time_machine.travel(NOW, tick=False):
        made = claim(r, req, owner="101")
        assert made.booking is not None
        waiting = Wait(room=7, cls="B", date=day(3), hours=(8, 10))
        assert wait_join(client=r, owner_id="102", wait=waiting, now=NOW) == "ok"
        cancelled = booking_cancel(
            client=r, booking_id=made.booking.id, actor_id="101", actor_is_staff=False, now=NOW
        )
        assert cancelled.ok  # the slot goes to the waiter as a priority hold
        owner_forget(client=r, owner_id="102", now=NOW)
        third = booking_claim(client=r, owner_id="103", request=req,
                              booking_id=booking_new_id(room=7), now=NOW)  # fmt: skip
    assert third.ok, third.taken
    assert not r.hgetall(RoomKeys(7).holds)


@pytest.mark.parametrize("finished_by", ["recovery", "reading"])
def test_an_account_deleted_mid_move_keeps_no_booking_in_either_room(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch, finished_by: str
) -> None:
    """The mover dies after the old room decided; the account is deleted; then the recovery
    (or anyone reading the booking) would finish the move: the booking must end cancelled."""
    from booking.engine.owners import owner_forget

    mine = booked(r)
    pending = died_after_step_2(r, monkeypatch, mine)
    with time_machine.travel(NOW, tick=False):
        assert owner_forget(client=r, owner_id=BUYER, now=NOW) == 1
    if finished_by == "recovery":
        moves_rooms.moves_recover(client=r, rooms=[9], now=NOW + dt.timedelta(minutes=1))
    else:
        booking_get(client=r, booking_id=mine.id)
    record = r.hgetall(RoomKeys(9).record(pending))
    assert record.get("status") == "cancelled" and record.get("owner") == "0", record
    for room in (7, 9):
        assert {8, 9} <= set(free_hours(client=r, room=room, date=day(3), cls="B")), room


def test_a_room_closed_while_a_move_into_it_is_under_way_stops_the_move(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The move has held its new slots (step 1) when staff close the room: the closure
    settles it, so nothing ends up booked inside the closure, and the booking stays where it
    was."""
    from booking.engine.closures import Closure, closure_bookings

    mine = booked(r)
    flood = Closure("floodclosure01", (9,), day(3), day(3), None, "flood")
    answer, closure = closed_while_moving(r, monkeypatch, mine, "booking_move_out", flood)
    assert answer.outcome == "aborted"
    assert not closure_bookings(client=r, closure=closure)
    found = booking_get(client=r, booking_id=mine.id)
    assert found is not None and found.room == 7 and found.status == "confirmed"
    assert not list(r.scan_iter(match=RoomKeys(9).record("") + "*"))  # the held slots let go


@pytest.mark.parametrize("room", [7, 9])
def test_a_move_into_slots_the_owner_holds_ends_their_hold_as_booking_does(
    r: redis.Redis, room: int
) -> None:
    from booking.domain.rules import hold_new_id
    from booking.engine.holds import booking_hold

    mine = booked(r)
    wanted = request("B", room=room, hour_start=12, hour_end=14)
    with time_machine.travel(NOW, tick=False):
        assert booking_hold(client=r, owner_id=BUYER, request=wanted,
                            hold_id=hold_new_id(room=room), now=NOW).ok  # fmt: skip
    assert move(r, mine.id, room, "h" * 20, hour_start=12, hour_end=14).ok
    assert not r.hgetall(RoomKeys(room).holds)  # the hold counts toward no cap any more


@pytest.mark.parametrize("room", [7, 12])
def test_a_move_from_a_page_read_before_another_move_says_the_booking_moved(
    r: redis.Redis, room: int
) -> None:
    """Two tabs: the first moved the booking to room 9; the second's move (in the old room,
    or to another) is refused as moved meanwhile, not as cancelled."""
    mine = booked(r)
    assert move(r, mine.id, 9, "a" * 20).ok
    late = move(r, mine.id, room, "b" * 20, hour_start=12, hour_end=14)
    assert late.outcome == "moved_away", late
