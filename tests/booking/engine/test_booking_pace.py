"""The buyer's hourly allowance of bookings, on both layouts: one server (the claim function
counts it in the same call) and cluster mode (counted first in the buyer's own slot, given back
when the claim is refused). Either way only bookings made count, a retry is not counted twice,
and a refusal leaves the store as it was."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import redis

from booking.domain.keys import pace_of
from booking.domain.rules import booking_new_id, hold_new_id
from booking.engine.bookings import bookings_of
from booking.engine.claims import PACE_WINDOW_MS, ClaimResult, booking_claim
from booking.engine.holds import booking_hold
from booking.engine.pace import PACE_SETTLE_MS, booking_pace
from strongroom.clock import to_ms
from strongroom.store import round_trips, tags_may_mix
from tests.booking_support import BUYER, NOW, SECOND_BUYER, claim, request, snapshot
from tests.store_support import store_probed


# The one-server store is a server of its own: that case is slow (tests/conftest.py).
@pytest.fixture(params=["cluster mode", pytest.param("one server", marks=pytest.mark.slow)])
def store(request: pytest.FixtureRequest) -> redis.Redis:
    if request.param == "one server":
        client: redis.Redis = request.getfixturevalue("one_server")
    else:
        client = request.getfixturevalue("r")
    store_probed(client)
    return client


def test_the_allowance_counts_bookings_made_and_a_retry_once(
    store: redis.Redis, settings: Any
) -> None:
    settings.STRONGROOM_BOOKINGS_PER_HOUR = 2
    first = claim(store, request("A", room=11), paced=True)
    second_id = booking_new_id(room=12)

    def second_claim() -> ClaimResult:
        return booking_claim(
            client=store, owner_id=BUYER, request=request("A", room=12), booking_id=second_id,
            now=NOW, paced=True,
        )  # fmt: skip

    second = second_claim()
    assert first.ok and second.ok
    again = second_claim()
    assert again.ok and again.booking == second.booking  # a retry: the same booking, not counted
    before = snapshot(store)
    refused = claim(store, request("A", room=13), paced=True)
    assert not refused.ok and refused.taken == ()
    assert refused.paced_until is not None
    assert to_ms(refused.paced_until) == to_ms(NOW) + PACE_WINDOW_MS  # when the first one ages out
    assert snapshot(store) == before
    assert len(bookings_of(client=store, owner_id=BUYER)) == 2
    # An hour on, the allowance is whole again.
    later = booking_claim(
        client=store, owner_id=BUYER, request=request("A", room=13),
        booking_id=booking_new_id(room=13), now=NOW + dt.timedelta(hours=1), paced=True,
    )  # fmt: skip
    assert later.ok


def test_a_refused_claim_writes_nothing_and_uses_none_of_the_allowance(
    store: redis.Redis, settings: Any
) -> None:
    settings.STRONGROOM_BOOKINGS_PER_HOUR = 2
    assert claim(store, request("A", room=20), owner=SECOND_BUYER).ok
    before = snapshot(store)
    for _ in range(3):
        lost = claim(store, request("A", room=20), paced=True)
        assert not lost.ok and lost.taken and lost.paced_until is None
    assert snapshot(store) == before
    assert claim(store, request("A", room=21), paced=True).ok
    assert claim(store, request("A", room=22), paced=True).ok
    assert claim(store, request("A", room=23), paced=True).paced_until is not None


def test_a_buyer_whose_allowance_is_spent_may_not_hold_either(
    store: redis.Redis, settings: Any
) -> None:
    settings.STRONGROOM_BOOKINGS_PER_HOUR = 2
    assert claim(store, request("A", room=11), paced=True).ok
    assert claim(store, request("A", room=12), paced=True).ok
    before = snapshot(store)
    refused = booking_hold(
        client=store, owner_id=BUYER, request=request("A", room=13),
        hold_id=hold_new_id(room=13), now=NOW, paced=True,
    )  # fmt: skip
    assert not refused.ok and refused.hold is None and refused.taken == ()
    assert refused.paced_until is not None
    assert to_ms(refused.paced_until) == to_ms(NOW) + PACE_WINDOW_MS
    assert snapshot(store) == before, "the refused hold blocked nothing"
    # Another buyer, and this buyer an hour on, hold as before.
    assert booking_hold(
        client=store, owner_id=SECOND_BUYER, request=request("A", room=13),
        hold_id=hold_new_id(room=13), now=NOW, paced=True,
    ).ok  # fmt: skip
    assert booking_hold(
        client=store, owner_id=BUYER, request=request("A", room=14),
        hold_id=hold_new_id(room=14), now=NOW + dt.timedelta(hours=1), paced=True,
    ).ok  # fmt: skip


def test_staff_and_scripts_are_not_paced(store: redis.Redis, settings: Any) -> None:
    settings.STRONGROOM_BOOKINGS_PER_HOUR = 1
    assert all(claim(store, request("A", room=room)).ok for room in (30, 31, 32))
    assert claim(store, request("A", room=33), paced=True).ok  # none of those was counted


def test_one_server_counts_the_allowance_inside_the_claim(one_server: redis.Redis) -> None:
    """One round trip for a booking and for a refusal: no pace call before the claim and no
    entry given back after it."""
    store_probed(one_server)
    with round_trips() as made:
        assert claim(one_server, request("A", room=40), paced=True).ok
    with round_trips() as refused:
        assert claim(one_server, request("A", room=40), owner=SECOND_BUYER, paced=True).taken
    assert made.count == refused.count == 1


def test_claims_cut_off_before_they_ran_stop_counting_once_they_cannot_be_under_way(
    r: redis.Redis, settings: Any
) -> None:
    """On a cluster the allowance is counted first; a claim cut off before it ran (a failover:
    the buyer saw "try again") gives nothing back. Its entry counts while the claim could
    still be under way (PACE_SETTLE_MS), then no more: a buyer is held to the bookings made."""
    store_probed(r)
    assert not tags_may_mix(r)  # the counting-first layout
    settings.STRONGROOM_BOOKINGS_PER_HOUR = 3
    made = claim(r, request("A", room=21), paced=True)
    assert made.ok and made.booking is not None
    for room in (22, 23):  # counted, never claimed: what a cut-off claim leaves behind
        cut = booking_new_id(room=room)
        assert booking_pace(client=r, owner_id=BUYER, booking_id=cut, now=NOW) is None

    def book(room: int, after: dt.timedelta) -> ClaimResult:
        return booking_claim(
            client=r, owner_id=BUYER, request=request("A", room=room),
            booking_id=booking_new_id(room=room), now=NOW + after, paced=True,
        )  # fmt: skip

    def hold(room: int, after: dt.timedelta) -> bool:
        return booking_hold(
            client=r, owner_id=BUYER, request=request("A", room=room),
            hold_id=hold_new_id(room=room), now=NOW + after, paced=True,
        ).ok  # fmt: skip

    soon = dt.timedelta(milliseconds=PACE_SETTLE_MS // 2)
    refused = book(24, soon)
    # Told when the cut-off claims may be dropped (not an hour on, when they would age out).
    assert refused.paced_until is not None
    assert to_ms(refused.paced_until) == to_ms(NOW) + PACE_SETTLE_MS
    assert not hold(24, soon)
    settled = dt.timedelta(milliseconds=PACE_SETTLE_MS + 1000)
    assert hold(24, settled)  # the hold path settles too
    assert book(24, settled).ok
    # The booking made before and this one count; the cut-off ones went.
    assert r.zcard(pace_of(BUYER)) == 2 and made.booking.id in r.zrange(pace_of(BUYER), 0, -1)
    assert book(25, settled).ok and not book(26, settled).ok  # three made: the limit holds
