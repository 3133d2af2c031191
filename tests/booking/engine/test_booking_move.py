"""Moving a booking: the new slots taken and the old given back in one step, or nothing."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest
import redis

from booking.domain.calendar_files import booking_ics
from booking.domain.keys import RoomKeys
from booking.domain.records import Booking
from booking.domain.rules import calendar_day
from booking.engine import audit, bookings, stats
from booking.engine.cancel import booking_cancel
from booking.engine.claims import booking_claim
from booking.engine.moves import booking_move
from booking.engine.pickup import booking_pickup
from booking.slots.panel_state import panel_state  # noqa: F401  (the read the pages use)
from tests.booking_support import (
    BUYER,
    NOW,
    SECOND_BUYER,
    SHANGHAI,
    STAFF,
    claim,
    day,
    free_hours,
    request,
)


def booked(r: redis.Redis, cls: str = "B", owner: str = BUYER, **extra: Any) -> Booking:
    if cls == "B":
        extra = {"hour_start": 8, "hour_end": 12, **extra}
    if cls == "C":
        extra = {"hour_start": 8, "hour_end": 10, "boxes": [5], **extra}
    result = claim(r, request(cls, **extra), owner=owner)
    assert result.ok and result.booking is not None, result
    return result.booking


def move(r: redis.Redis, booking: Booking, actor: str = BUYER, staff: bool = False, **to: Any):
    cls = to.pop("cls", booking.cls)
    return booking_move(
        client=r, booking_id=booking.id, request=request(cls, **to), actor_id=actor,
        actor_is_staff=staff, now=NOW,
    )  # fmt: skip


def test_a_move_takes_the_new_hours_and_frees_the_old_with_a_new_code(r: redis.Redis) -> None:
    mine = booked(r, hour_start=8, hour_end=10)
    result = move(r, mine, hour_start=14, hour_end=16)
    assert result.ok and result.booking is not None
    moved = result.booking
    assert moved.id == mine.id and moved.reference == mine.reference
    assert moved.hours == (14, 16) and moved.seq == 1 and moved.uid_dates == mine.dates
    free = free_hours(client=r, room=7, date=day(3), cls="B")
    assert {8, 9} <= set(free) and not {14, 15} & set(free)
    # The old code no longer opens; the new one does, on the day and in the new hours.
    assert moved.pickup_code() != mine.pickup_code()
    on_the_day = dt.datetime(2026, 12, 3, 14, 30, tzinfo=SHANGHAI)
    old = booking_pickup(client=r, room=7, code=mine.pickup_code(), now=on_the_day)
    assert old.outcome == "wrong_code"
    assert booking_pickup(client=r, room=7, code=moved.pickup_code(), now=on_the_day).ok
    kinds = [e.kind for e in audit.booking_audit(client=r, booking_id=mine.id)]
    assert "move" in kinds


def test_a_move_onto_its_own_slots_overlapping_is_allowed(r: redis.Redis) -> None:
    mine = booked(r, hour_start=8, hour_end=12)
    result = move(r, mine, hour_start=10, hour_end=14)
    assert result.ok
    free = free_hours(client=r, room=7, date=day(3), cls="B")
    assert {8, 9} <= set(free) and not {10, 11, 12, 13} & set(free)


def test_a_move_into_taken_slots_leaves_everything_as_it_was(r: redis.Redis) -> None:
    mine = booked(r, hour_start=8, hour_end=10)
    booked(r, hour_start=12, hour_end=14, owner=SECOND_BUYER)
    before = {k: r.dump(k) for k in r.scan_iter(match="sr:{room:007}:*")}
    result = move(r, mine, hour_start=11, hour_end=13)
    assert not result.ok and result.outcome == "taken" and result.taken
    after = {k: r.dump(k) for k in r.scan_iter(match="sr:{room:007}:*")}
    assert before == after


def test_days_and_classes_and_boxes_move(r: redis.Redis) -> None:
    a = booked(r, "A", dates=(3, 4))
    assert move(r, a, dates=(5, 6)).ok
    assert bookings.booking_get(client=r, booking_id=a.id).dates == (day(5), day(6))  # type: ignore[union-attr]
    assert move(r, a, dates=(7,)).outcome == "other_class"  # as many days as it has
    c = booked(r, "C")
    moved = move(r, c, boxes=[9], hour_start=8, hour_end=10)
    assert moved.ok and moved.booking is not None and moved.booking.boxes == (9,)
    assert move(r, c, cls="B", hour_start=8, hour_end=9).outcome == "other_class"


def test_the_rules_at_both_ends(r: redis.Redis) -> None:
    mine = booked(r, dates=(3,))
    # The old end: not from its first day on (for the owner and staff alike).
    on_the_day = dt.datetime(2026, 12, 3, 7, 0, tzinfo=SHANGHAI)
    late = booking_move(
        client=r, booking_id=mine.id, request=request("B", dates=(5,), hour_start=8, hour_end=9),
        actor_id=BUYER, actor_is_staff=False, now=on_the_day,
    )  # fmt: skip
    assert late.outcome == "started"
    # The new end: one day ahead (the request is checked again at move time).
    from booking.domain.parser import InvalidRequest

    with pytest.raises(InvalidRequest):
        booking_move(
            client=r, booking_id=mine.id,
            request=request("B", dates=(3,), hour_start=13, hour_end=14),
            actor_id=BUYER, actor_is_staff=False,
            now=dt.datetime(2026, 12, 2, 23, 0, tzinfo=SHANGHAI) + dt.timedelta(hours=2),
        )  # fmt: skip
    # Someone else's booking: only staff.
    assert move(r, mine, actor=SECOND_BUYER, hour_start=13, hour_end=14).outcome == "forbidden"
    assert move(r, mine, actor=STAFF, staff=True, hour_start=13, hour_end=14).ok


@pytest.mark.parametrize("room", [7, 8], ids=["same room", "another room"])
def test_a_move_read_before_midnight_and_run_after_it_is_refused_by_the_function(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch, room: int
) -> None:
    """Python checks the new days once; the call is built after that check, and the function
    checks the day-ahead rule itself against the first day the call carries, as a claim's
    does (here midnight falls between the two: the call says the 4th is the first day)."""
    from booking.domain.parser import InvalidRequest
    from booking.engine import moves, moves_rooms

    mine = booked(r, dates=(5,))
    for module in (moves, moves_rooms):
        monkeypatch.setattr(module, "first_bookable_day", lambda now=None: calendar_day(day(4)))
    before = {k: r.dump(k) for k in r.scan_iter(match="sr:*")}
    with pytest.raises(InvalidRequest):
        move(r, mine, room=room, dates=(3,), hour_start=13, hour_end=14)
    assert {k: r.dump(k) for k in r.scan_iter(match="sr:*")} == before
    assert move(r, mine, room=room, dates=(6,), hour_start=13, hour_end=14).ok


def test_the_stats_after_a_move_are_what_a_rebuild_finds(r: redis.Redis) -> None:
    mine = booked(r, "C", dates=(3, 4))
    booked(r, "C", boxes=[6], owner=SECOND_BUYER)
    assert move(r, mine, boxes=[7, 8], dates=(5, 6), hour_start=9, hour_end=12).ok
    live = r.hgetall(RoomKeys(7).stats)
    stats.stats_rebuild(client=r, rooms=[7])
    assert r.hgetall(RoomKeys(7).stats) == live


def test_the_lists_follow_the_move(r: redis.Redis) -> None:
    mine = booked(r, "A", dates=(3,))
    assert move(r, mine, dates=(9,)).ok
    early = bookings.bookings_between(client=r, start=day(3), end=day(3))
    later = bookings.bookings_between(client=r, start=day(9), end=day(9))
    assert early == [] and [b.id for b in later] == [mine.id]
    assert [b.id for b in bookings.bookings_of(client=r, owner_id=BUYER)] == [mine.id]


def test_a_moved_bookings_calendar_keeps_its_uids_with_a_higher_sequence(r: redis.Redis) -> None:
    mine = booked(r, "A", dates=(3, 4))
    before = booking_ics(mine, url="https://x/").decode()
    result = move(r, mine, dates=(6, 8))
    assert result.booking is not None
    after = booking_ics(result.booking, url="https://x/").decode()
    uids = [line for line in before.splitlines() if line.startswith("UID")]
    assert uids and uids == [line for line in after.splitlines() if line.startswith("UID")]
    assert "SEQUENCE:0" in before and "SEQUENCE:1" in after and "20261206" in after


def test_a_repeated_move_answers_moved_again(r: redis.Redis) -> None:
    mine = booked(r, hour_start=8, hour_end=10)
    req = request("B", hour_start=14, hour_end=16)
    args: dict[str, Any] = {"client": r, "booking_id": mine.id, "request": req, "actor_id": BUYER}
    calls = [
        booking_move(**args, actor_is_staff=False, now=NOW, move_id="move-request-0001")
        for _ in range(2)
    ]
    assert [c.outcome for c in calls] == ["moved", "moved"]
    assert calls[0].booking == calls[1].booking and calls[1].booking.seq == 1  # type: ignore[union-attr]


def test_twenty_buyers_moving_into_one_free_slot_at_once_exactly_one_moves(
    r: redis.Redis,
) -> None:
    theirs = [booked(r, hour_start=h, hour_end=h + 1, owner=str(200 + h)) for h in range(20)]
    target = request("B", dates=(4,), hour_start=10, hour_end=11)
    start = threading.Barrier(len(theirs))
    results: dict[str, Any] = {}

    def go(b: Booking) -> None:
        start.wait()  # one shared client: its pool gives each thread a connection
        results[b.id] = booking_move(
            client=r, booking_id=b.id, request=target, actor_id=b.owner_id,
            actor_is_staff=False, now=NOW,
        )  # fmt: skip

    threads = [threading.Thread(target=go, args=(b,)) for b in theirs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    moved = [i for i, res in results.items() if res.ok]
    assert len(results) == len(theirs) and len(moved) == 1
    for b in theirs:
        now_is = bookings.booking_get(client=r, booking_id=b.id)
        assert now_is is not None
        if b.id in moved:
            assert now_is.dates == (day(4),) and now_is.hours == (10, 11)
        else:
            assert results[b.id].outcome == "taken"
            assert now_is.dates == b.dates and now_is.hours == b.hours and now_is.seq == 0
    # Every old slot of the losers is still theirs; the winner's old hour is free.
    free = free_hours(client=r, room=7, date=day(3), cls="B")
    winner = next(b for b in theirs if b.id in moved)
    assert free == [winner.hours[0]] + [h for h in range(20, 24)]  # type: ignore[index]


def test_the_claim_still_refuses_slots_a_move_took(r: redis.Redis) -> None:
    mine = booked(r, hour_start=8, hour_end=10)
    assert move(r, mine, hour_start=14, hour_end=16).ok
    result = booking_claim(
        client=r, owner_id=SECOND_BUYER, request=request("B", hour_start=15, hour_end=17),
        booking_id=RoomKeys(7).tag + "-" + "a" * 26, now=NOW,
    )  # fmt: skip
    assert not result.ok and result.taken


# --- across rooms: the new room holds, the old room decides ---------------------------------


def all_slots(r: redis.Redis, room: int, cls: str = "B") -> dict[int, set[int]]:
    """season day (0: December 1) -> booked hours of a room's class B bitmap, read straight
    from the store."""
    key = RoomKeys(room).inventory(cls, "2026-12")  # the test season: December 2026
    found: dict[int, set[int]] = {}
    if not r.exists(key):
        return found
    masks = r.execute_command(
        "BITFIELD_RO", key, *[x for d in range(31) for x in ("GET", "u24", d * 24)]
    )
    for season_day, mask in enumerate(masks):
        hours = {h for h in range(24) if int(mask) >> (23 - h) & 1}
        if hours:
            found[season_day] = hours
    return found


def test_a_move_to_another_room_keeps_the_reference_and_gives_a_new_code(r: redis.Redis) -> None:
    mine = booked(r, hour_start=8, hour_end=10)
    result = move(r, mine, room=12, hour_start=14, hour_end=16)
    assert result.ok and result.booking is not None, result
    moved = result.booking
    assert moved.room == 12 and moved.id != mine.id and moved.reference == mine.reference
    assert moved.status == "confirmed" and moved.seq == 1 and moved.uid_id == mine.id
    assert 8 in free_hours(client=r, room=7, date=day(3), cls="B")
    assert 14 not in free_hours(client=r, room=12, date=day(3), cls="B")
    # Old links lead to the booking as it is now; the lists show it once, in its new room.
    assert bookings.booking_get(client=r, booking_id=mine.id) == moved
    assert [b.id for b in bookings.bookings_of(client=r, owner_id=BUYER)] == [moved.id]
    listed = bookings.bookings_between(client=r, start=day(3), end=day(3))
    assert [b.id for b in listed] == [moved.id]
    on_the_day = dt.datetime(2026, 12, 3, 14, 30, tzinfo=SHANGHAI)
    assert booking_pickup(client=r, room=7, code=mine.pickup_code(), now=on_the_day).outcome == (
        "wrong_code"
    )
    assert booking_pickup(client=r, room=12, code=moved.pickup_code(), now=on_the_day).ok
    before = booking_ics(mine, url="https://x/").decode()
    after = booking_ics(moved, url="https://x/").decode()
    uids = [line for line in before.splitlines() if line.startswith("UID")]
    assert uids == [line for line in after.splitlines() if line.startswith("UID")]
    for room in (7, 12):
        live = r.hgetall(RoomKeys(room).stats)
        stats.stats_rebuild(client=r, rooms=[room])
        assert r.hgetall(RoomKeys(room).stats) == live, room


def test_a_move_to_another_room_keeps_as_many_days_as_were_bought(r: redis.Redis) -> None:
    """Two days moved to one day of another room (the same day typed twice reads as one) is
    refused, by the caller and again by the old room's function, and changes nothing."""
    from booking.engine import moves_rooms

    mine = booked(r, "A", dates=(3, 4))
    # Everything of the old room but the record (the undone move marks it aborted) and the
    # edition: its slots, stats, codes and lists.
    kept = [RoomKeys(7).record(mine.id), RoomKeys(7).edition]
    before = {k: r.dump(k) for k in r.scan_iter(match="sr:{room:007}:*") if k not in kept}
    assert move(r, mine, room=12, dates=(9,)).outcome == "other_class"
    assert not r.exists(RoomKeys(12).edition)  # refused before anything was held there
    # The old room's own check, for a caller that skipped the first one.
    direct = moves_rooms.move_rooms(
        r, mine.id, request("A", room=12, dates=(9,)), BUYER, False, NOW, "m" * 26, BUYER
    )
    assert not direct.ok and direct.outcome == "other_class"
    assert {k: r.dump(k) for k in r.scan_iter(match="sr:{room:007}:*") if k not in kept} == before
    assert bookings.booking_get(client=r, booking_id=mine.id) == mine
    assert [b.id for b in bookings.bookings_of(client=r, owner_id=BUYER)] == [mine.id]
    assert move(r, mine, room=12, dates=(9, 10)).ok  # the refused try left nothing held


@pytest.mark.parametrize("staff", [False, True])
def test_cancelling_from_a_page_read_before_a_move_cancels_the_booking_where_it_is(
    r: redis.Redis, staff: bool
) -> None:
    """The old id of a booking moved to another room holds no slots: a cancel sent from a page
    read before the move (a stale tab, a cancel racing the move) must not free them, now that
    someone else may have booked them; it cancels the booking in its new room."""
    mine = booked(r, hour_start=8, hour_end=10)
    moved = move(r, mine, room=12, hour_start=8, hour_end=10).booking
    assert moved is not None
    theirs = booked(r, hour_start=8, hour_end=10, owner=SECOND_BUYER)  # the freed old slots
    result = booking_cancel(
        client=r, booking_id=mine.id, actor_id=STAFF if staff else BUYER,
        actor_is_staff=staff, reason="stale tab", now=NOW,
    )  # fmt: skip
    assert result.ok and result.booking is not None and result.booking.id == moved.id
    assert not {8, 9} & set(free_hours(client=r, room=7, date=day(3), cls="B"))
    assert {8, 9} <= set(free_hours(client=r, room=12, date=day(3), cls="B"))
    again = bookings.booking_get(client=r, booking_id=theirs.id)
    assert again is not None and again.status == "confirmed"
    for room in (7, 12):
        live = r.hgetall(RoomKeys(room).stats)
        stats.stats_rebuild(client=r, rooms=[room])
        assert r.hgetall(RoomKeys(room).stats) == live, room


def test_a_cancel_follows_every_move_finishes_a_half_done_one_and_repeats_alike(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    from booking.engine import moves_rooms

    mine = booked(r, hour_start=8, hour_end=10)
    current = mine
    for room in (12, 13, 14, 15, 16):  # more moves than a page is likely to be behind
        moved = move(r, current, room=room, hour_start=8, hour_end=10).booking
        assert moved is not None
        current = moved
    # The last mover dies after the old room decided (step 2), before the commit (step 3).
    monkeypatch.setattr(moves_rooms, "_move_commit", lambda *args, **kwargs: None)
    assert not move(r, current, room=17, hour_start=8, hour_end=10).ok
    monkeypatch.undo()
    request_id = "r" * 22
    first = booking_cancel(client=r, booking_id=mine.id, actor_id=BUYER, actor_is_staff=False,
                           now=NOW, request_id=request_id)  # fmt: skip
    assert first.ok and first.booking is not None and first.booking.room == 17, first
    again = booking_cancel(client=r, booking_id=mine.id, actor_id=BUYER, actor_is_staff=False,
                           now=NOW, request_id=request_id)  # fmt: skip
    assert again.outcome == "cancelled"  # the same request, answered as the first time
    other = booking_cancel(client=r, booking_id=mine.id, actor_id=BUYER, actor_is_staff=False,
                           now=NOW)  # fmt: skip
    assert other.outcome == "already_cancelled"
    for room in (7, 12, 13, 14, 15, 16, 17):
        assert {8, 9} <= set(free_hours(client=r, room=room, date=day(3), cls="B")), room


def test_a_cancel_told_not_to_follow_a_move_cancels_nothing(r: redis.Redis) -> None:
    mine = booked(r, hour_start=8, hour_end=10)
    moved = move(r, mine, room=12, hour_start=8, hour_end=10).booking
    assert moved is not None
    result = booking_cancel(client=r, booking_id=mine.id, actor_id=STAFF, actor_is_staff=True,
                            now=NOW, follow_moves=False)  # fmt: skip
    assert not result.ok and result.outcome == "moved"
    assert bookings.booking_get(client=r, booking_id=moved.id).status == "confirmed"  # type: ignore[union-attr]


def test_a_move_to_a_taken_slot_in_another_room_changes_nothing(r: redis.Redis) -> None:
    mine = booked(r, hour_start=8, hour_end=10)
    booked(r, room=12, hour_start=14, hour_end=15, owner=SECOND_BUYER)
    before = {k: r.dump(k) for k in r.scan_iter(match="sr:*") if b"stats" not in k.encode()}
    result = move(r, mine, room=12, hour_start=14, hour_end=16)
    assert result.outcome == "taken"
    after = {k: r.dump(k) for k in r.scan_iter(match="sr:*") if b"stats" not in k.encode()}
    assert before == after


def test_a_refused_old_end_lets_go_of_the_new_slots(r: redis.Redis) -> None:
    mine = booked(r, hour_start=8, hour_end=10)
    late = booking_move(
        client=r, booking_id=mine.id, request=request("B", room=12, dates=(5,), hour_start=1,
        hour_end=2), actor_id=BUYER, actor_is_staff=False,
        now=dt.datetime(2026, 12, 3, 7, 0, tzinfo=SHANGHAI),
    )  # fmt: skip
    assert late.outcome == "started"
    assert all_slots(r, 12) == {} and not r.zcard(RoomKeys(12).moves)
    assert bookings.booking_get(client=r, booking_id=mine.id) == mine


def test_twenty_buyers_moving_into_one_free_slot_of_another_room_exactly_one_moves(
    r: redis.Redis,
) -> None:
    theirs = [booked(r, hour_start=h, hour_end=h + 1, owner=str(200 + h)) for h in range(20)]
    target = request("B", room=12, dates=(4,), hour_start=10, hour_end=11)
    start = threading.Barrier(len(theirs))
    results: dict[str, Any] = {}

    def go(b: Booking) -> None:
        start.wait()
        results[b.id] = booking_move(
            client=r, booking_id=b.id, request=target, actor_id=b.owner_id,
            actor_is_staff=False, now=NOW,
        )  # fmt: skip

    threads = [threading.Thread(target=go, args=(b,)) for b in theirs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == len(theirs)
    assert sorted(res.outcome for res in results.values()) == ["moved"] + ["taken"] * 19
    losers = [b for b in theirs if not results[b.id].ok]
    for b in losers:
        assert bookings.booking_get(client=r, booking_id=b.id) == b
    assert all_slots(r, 12) == {3: {10}}  # season day 3 is December 4
    assert all_slots(r, 7)[2] == set(range(20)) - {
        next(b for b in theirs if results[b.id].ok).hours[0]  # type: ignore[index]
    }


@pytest.mark.parametrize("cut_after", ["move_in", "move_out"])
def test_a_move_cut_off_half_way_is_finished_or_undone_by_the_recovery(
    r: redis.Redis, cut_after: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from booking.engine import moves_rooms as moves

    mine = booked(r, hour_start=8, hour_end=10)

    class Cut(Exception):
        pass

    real = moves.durable_fcall

    def cut(client: Any, name: str, *rest: Any, **options: Any) -> Any:
        reply = real(client, name, *rest, **options)
        if name == f"booking_{cut_after}":
            raise Cut  # the mover dies right after this step
        return reply

    monkeypatch.setattr(moves, "durable_fcall", cut)
    with pytest.raises(Cut):
        move(r, mine, room=12, hour_start=14, hour_end=16)
    monkeypatch.setattr(moves, "durable_fcall", real)
    assert r.zcard(RoomKeys(12).moves) == 1
    # Too early: the mover may still be at work.
    assert moves.moves_recover(client=r, rooms=[12], now=NOW) == 0
    later = NOW + dt.timedelta(minutes=1)
    assert moves.moves_recover(client=r, rooms=[12], now=later) == 1
    now_is = bookings.booking_get(client=r, booking_id=mine.id)
    assert now_is is not None and now_is.status == "confirmed"
    if cut_after == "move_in":  # the old room had not decided: undone
        assert now_is == mine and all_slots(r, 12) == {}
        assert all_slots(r, 7) == {2: {8, 9}}
    else:  # the old room had let go: finished
        assert now_is.room == 12 and now_is.reference == mine.reference
        assert all_slots(r, 7) == {} and all_slots(r, 12) == {2: {14, 15}}
    assert moves.moves_recover(client=r, rooms=[12], now=later) == 0


def test_a_booking_with_a_day_collected_has_started_not_been_collected(r: redis.Redis) -> None:
    """A stale move form of a two-day booking collected on its first day: "only before its
    first day" (its second day is not collected); "has been collected" is for every day."""
    mine = booked(r, "A", dates=(3, 4))
    first_day = dt.datetime(2026, 12, 3, 9, 0, tzinfo=SHANGHAI)
    assert booking_pickup(client=r, room=mine.room, code=mine.pickup_code(), now=first_day).ok
    for is_staff in (False, True):
        late = booking_move(
            client=r, booking_id=mine.id, request=request("A", dates=(6, 7)),
            actor_id=BUYER, actor_is_staff=is_staff, now=first_day,
        )  # fmt: skip
        assert (late.ok, late.outcome) == (False, "started")
        assert "only before its first day" in str(late.message)
