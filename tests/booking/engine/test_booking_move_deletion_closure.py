"""Cross-room moves against account deletion and closures, and the move functions' own guards:
a deletion counts each booking once and no move gets past it, a closure settles exactly the
moves into its slots (whatever the movers' clocks), refused moves leave no growing trace, and
a move id the functions cannot fence is refused by them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
import redis
import time_machine

from booking.domain.keys import RoomKeys, person_index
from booking.engine import moves_rooms
from booking.engine.bookings import booking_get
from booking.engine.stats import stats_rebuild
from tests.booking.engine.test_booking_move_interleavings import (
    booked,
    calls_replaced,
    closed_while_moving,
    move,
)
from tests.booking_support import BUYER, NOW, STAFF, day, free_hours


def stats_exact(r: redis.Redis, rooms: tuple[int, ...]) -> None:
    for room in rooms:
        live = r.hgetall(RoomKeys(room).stats)
        stats_rebuild(client=r, rooms=[room])
        assert r.hgetall(RoomKeys(room).stats) == live, room


def test_account_deleted_after_a_mover_died_between_commit_and_unindexing_counts_once(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mover dies right after step 3 (before the old id leaves the person's index): the
    index names the old id and the new one. owner_forget must cancel the booking once, not
    hand booking_owner_forget the same record twice (stats then count it cancelled twice)."""
    from booking.engine.owners import owner_forget

    mine = booked(r)

    def replace(name: str, call: Callable[[], Any]) -> Any:
        answer = call()
        if name == "booking_move_commit":
            raise ConnectionError("the mover dies after step 3, before the index clean-up")
        return answer

    with calls_replaced(monkeypatch, replace), pytest.raises(ConnectionError):
        move(r, mine.id, 9, "m" * 20)
    assert r.zscore(person_index(BUYER), mine.id) is not None  # the old id is still listed
    with time_machine.travel(NOW, tick=False):
        cancelled = owner_forget(client=r, owner_id=BUYER, now=NOW)
    stats_exact(r, (7, 9))
    assert cancelled == 1


def test_a_closure_settles_a_move_whose_clock_runs_a_little_ahead(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pending record is scored by its mover's clock: one 2 s ahead of the staff's is
    settled by the closure all the same."""
    from booking.engine.closures import Closure, closure_bookings

    flood = Closure("floodclosure02", (9,), day(3), day(3), None, "flood")
    answer, closure = closed_while_moving(
        r, monkeypatch, booked(r), "booking_move_out", flood,
        mover_now=NOW + dt.timedelta(seconds=2),
    )  # fmt: skip
    assert not closure_bookings(client=r, closure=closure)
    assert answer.outcome == "aborted"


def test_a_closure_of_other_days_does_not_stop_a_move_into_the_room(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A closure of room 9 on December 20 leaves alone a move into room 9 on December 3 (it
    does not touch its slots)."""
    from booking.engine.closures import Closure

    later = Closure("paintclosure01", (9,), day(20), day(20), None, "paint")
    answer, _closure = closed_while_moving(r, monkeypatch, booked(r), "booking_move_out", later)
    assert answer.ok, answer


def test_refused_moves_of_a_cancelled_booking_do_not_grow_its_record(r: redis.Redis) -> None:
    """Each cross-room move the old room refuses is 'undone' with booking_move_abort, which
    now appends to the record's move_abort list: a cancelled booking (or one whose first day
    passed) can be grown without bound by pressing Move again and again."""
    from booking.engine.cancel import booking_cancel

    mine = booked(r)
    with time_machine.travel(NOW, tick=False):
        assert booking_cancel(client=r, booking_id=mine.id, actor_id=BUYER,
                              actor_is_staff=False, now=NOW).ok  # fmt: skip
    for n in range(30):
        assert move(r, mine.id, 9, f"{n:02d}" * 10).outcome == "cancelled"
    fence = str(r.hget(RoomKeys(7).record(mine.id), "move_abort") or "")
    assert len(fence.split(",")) <= 1, len(fence.split(","))


def test_a_move_id_with_a_comma_is_refused_by_the_room(r: redis.Redis) -> None:
    """booking_move_abort keeps a comma-joined list and booking_move_out splits it: the
    functions themselves must refuse a move id with a comma (only booking_move's Python check
    stands in the way today)."""
    mine = booked(r)
    from tests.booking_support import request

    odd = "a" * 20 + "," + "b" * 20
    with time_machine.travel(NOW, tick=False), pytest.raises(ValueError, match="call"):
        moves_rooms.move_rooms(
            r, mine.id, request("B", room=9, hour_start=8, hour_end=10), BUYER, False, NOW,
            odd, BUYER,
        )  # fmt: skip


def test_owner_forget_drops_a_plain_hold_in_a_room_with_nothing_else_of_theirs(
    r: redis.Redis,
) -> None:
    from booking.domain.rules import hold_new_id
    from booking.engine.holds import booking_hold
    from booking.engine.owners import owner_forget
    from tests.booking_support import request

    req = request("B", room=12, dates=(3,), hour_start=8, hour_end=10)
    with time_machine.travel(NOW, tick=False):
        held = booking_hold(client=r, owner_id=BUYER, request=req,
                            hold_id=hold_new_id(room=12), now=NOW)  # fmt: skip
        assert held.ok, held
        owner_forget(client=r, owner_id=BUYER, now=NOW)
    assert not r.hgetall(RoomKeys(12).holds)
    assert {8, 9} <= set(free_hours(client=r, room=12, date=day(3), cls="B"))
    _ = booking_get


@pytest.mark.parametrize("actor", [BUYER, STAFF])
def test_a_move_decided_while_the_account_is_deleted_leaves_no_booking_behind(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch, actor: str
) -> None:
    """The person is marked gone, the index read and the statuses read (_moved_on: the booking
    is still 'confirmed' in room 7); then a move (a request of theirs in flight, or staff's)
    is refused, or room 7's forget would find a 'moved' pointer and cancel nothing, and the
    booking would live on in room 9 under the deleted person."""
    from booking.engine import owners
    from booking.engine.moves import booking_move
    from tests.booking_support import request

    mine = booked(r)
    real = owners._moved_on

    def moved_on_then_a_move(client: redis.Redis, ids: list[str]) -> list[str]:
        found = real(client, ids)
        done = booking_move(client=r, booking_id=mine.id,
                            request=request("B", room=9, hour_start=8, hour_end=10),
                            actor_id=actor, actor_is_staff=actor == STAFF, now=NOW)  # fmt: skip
        assert done.outcome == "gone", done  # the person is marked: nothing more is moved
        return found

    monkeypatch.setattr(owners, "_moved_on", moved_on_then_a_move)
    with time_machine.travel(NOW, tick=False):
        owners.owner_forget(client=r, owner_id=BUYER, now=NOW)
    now_at = booking_get(client=r, booking_id=mine.id)
    assert now_at is None or now_at.status == "cancelled", now_at
    assert {8, 9} <= set(free_hours(client=r, room=9, date=day(3), cls="B"))


def test_owner_forget_drops_a_multi_day_hold_and_its_index_entries(r: redis.Redis) -> None:
    from booking.domain.rules import hold_new_id
    from booking.engine.holds import booking_hold
    from booking.engine.owners import owner_forget
    from tests.booking_support import request

    booked(r, room=7)  # room 7 is visited
    req = request("C", room=7, dates=(4, 5, 6), hour_start=8, hour_end=10, boxes=[3, 4])
    with time_machine.travel(NOW, tick=False):
        held = booking_hold(client=r, owner_id=BUYER, request=req,
                            hold_id=hold_new_id(room=7), now=NOW)  # fmt: skip
        assert held.ok, held
        assert r.zcard(RoomKeys(7).hold_days) == 3
        owner_forget(client=r, owner_id=BUYER, now=NOW)
    assert not r.hgetall(RoomKeys(7).holds)
    assert r.zcard(RoomKeys(7).hold_days) == 0


def test_closure_between_step_2_and_3_both_commits_succeed(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old room has decided when the closure comes: the closure finishes the move (the
    mover's own commit is then a repeat), and lists the booking inside."""
    from booking.engine.closures import Closure, closure_bookings

    flood = Closure("floodclosure03", (9,), day(3), day(3), None, "flood")
    answer, closure = closed_while_moving(r, monkeypatch, booked(r), "booking_move_commit", flood)
    moved = answer.booking
    assert answer.ok and moved is not None, answer
    assert [b.id for b in closure_bookings(client=r, closure=closure)] == [moved.id]
    assert r.xlen(RoomKeys(9).outbox) == 1  # one 'moved' mail, not two
    stats_exact(r, (7, 9))


def test_a_slot_freed_inside_a_closure_is_offered_to_no_waiter(r: redis.Redis) -> None:
    """Closing with 'cancel them': the freed slots are closed, so no waiter gets a priority
    hold of them (it could not be booked, and would count toward their cap for an hour)."""
    from booking.engine.closures import Closure, closure_add, closure_bookings_cancel
    from booking.engine.waits import Wait, wait_join, waits_of
    from tests.booking_support import claim, request

    made = claim(r, request("A", room=7, dates=(3,)), owner=BUYER).booking
    assert made is not None
    with time_machine.travel(NOW, tick=False):
        assert wait_join(client=r, owner_id="102", wait=Wait(7, "A", day(3)), now=NOW) == "ok"
        repair = Closure("repairclosure1", (7,), day(3), day(3), None, "x")
        shut = closure_add(client=r, actor_id=STAFF, now=NOW, closure=repair)
        assert closure_bookings_cancel(client=r, actor_id=STAFF, closure=shut,
                                       booking_ids=[made.id], now=NOW) == 1  # fmt: skip
    assert not r.hgetall(RoomKeys(7).holds)
    (still,) = waits_of(client=r, owner_id="102")
    assert still.told_at is None  # still waiting, not told of a closed slot
