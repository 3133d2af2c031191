"""Deleting an account while its other sessions keep booking: nothing is booked for a person
being deleted, and every booking they have ends cancelled under owner 0, its slots free."""

from __future__ import annotations

import threading

import redis

from booking.domain.keys import RoomKeys, person_index
from booking.domain.rules import booking_new_id, hold_new_id
from booking.engine.bookings import booking_get
from booking.engine.claims import ClaimResult, booking_claim
from booking.engine.holds import booking_hold
from booking.engine.owners import owner_forget
from booking.engine.waits import Wait, wait_join
from tests.booking_support import BUYER, NOW, SECOND_BUYER, claim, day, request

BOOKERS = 4
ROOMS_EACH = 60


def _claim_for(client: redis.Redis, thread: int, attempt: int) -> ClaimResult:
    room = 1 + thread * ROOMS_EACH + attempt % ROOMS_EACH
    date = 1 + attempt // ROOMS_EACH
    return booking_claim(
        client=client, owner_id=BUYER, request=request("A", room=room, dates=(date,)),
        booking_id=booking_new_id(room=room), now=NOW,
    )  # fmt: skip


def test_bookings_made_while_the_account_is_deleted_are_all_cancelled_and_none_follow(
    r: redis.Redis,
) -> None:
    made: list[list[ClaimResult]] = [[] for _ in range(BOOKERS)]
    after: list[list[ClaimResult]] = [[] for _ in range(BOOKERS)]
    forgotten = threading.Event()
    started = threading.Barrier(BOOKERS + 1)
    errors: list[BaseException] = []

    def book(thread: int) -> None:
        started.wait()
        try:
            attempt, tries_after = 0, 0
            while tries_after < 3:  # a few more after the deletion ended
                done = forgotten.is_set()
                result = _claim_for(r, thread, attempt)
                (after if done else made)[thread].append(result)
                tries_after += done
                attempt += 1
        except BaseException as exc:  # surfaced in the test's thread
            errors.append(exc)

    workers = [threading.Thread(target=book, args=(t,)) for t in range(BOOKERS)]
    for worker in workers:
        worker.start()
    started.wait()
    while sum(len(m) for m in made) < 2 * BOOKERS:  # the deletion starts amid the bookings
        threading.Event().wait(0.001)
    owner_forget(client=r, owner_id=BUYER, now=NOW)
    forgotten.set()
    for worker in workers:
        worker.join()
    assert not errors, errors

    confirmed = [res.booking for runs in made for res in runs if res.ok and res.booking]
    assert len(confirmed) >= 2 * BOOKERS
    for booking in confirmed:
        record = booking_get(client=r, booking_id=booking.id)
        assert record is not None
        assert (record.status, record.owner_id) == ("cancelled", "0"), record
    late = [res for runs in after for res in runs]
    assert late and all(res.gone and not res.ok for res in late), late
    assert not r.exists(person_index(BUYER)), "the deleted person's index is not made again"
    for thread in range(BOOKERS):
        for room in range(1 + thread * ROOMS_EACH, 1 + (thread + 1) * ROOMS_EACH):
            assert r.bitcount(RoomKeys(room).inventory("A", "2026-12")) == 0, (
                f"room {room}: not freed"
            )


def test_a_person_being_deleted_can_neither_hold_nor_wait_and_others_are_unaffected(
    r: redis.Redis,
) -> None:
    assert claim(r, request("A", room=5, dates=(3,)), owner=SECOND_BUYER).ok
    owner_forget(client=r, owner_id=BUYER, now=NOW)
    held = booking_hold(
        client=r, owner_id=BUYER, request=request("A", room=9), hold_id=hold_new_id(room=9),
        now=NOW,
    )  # fmt: skip
    assert not held.ok and held.gone
    assert wait_join(client=r, owner_id=BUYER, wait=Wait(5, "A", day(3)), now=NOW) == "gone"
    assert claim(r, request("A", room=9), owner=SECOND_BUYER).ok
