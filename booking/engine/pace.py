"""The buyer's hourly booking allowance (STRONGROOM_BOOKINGS_PER_HOUR): counted by the claim
function on one server; on a cluster, where the buyer's pace lives in their own slot, counted
here before the claim (`booking_pace`) and given back when it is refused. A claim cut off
before it answered (a failover, a stalled primary: the buyer saw "try again") cannot give its
entry back; once the buyer is at the limit, entries older than PACE_SETTLE_MS whose booking
was never written are dropped (`pace_settle`), so only bookings made count. Also read without
counting: a buyer who may not book for a while may not hold slots meanwhile either."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

import redis
from django.conf import settings

from accounts.gates import window_gate
from booking.domain.keys import RoomKeys, pace_of
from booking.domain.rules import booking_id_room
from strongroom.clock import from_ms, to_ms
from strongroom.clock import now_ms as clock_ms
from strongroom.decoders import text_scored

PACE_WINDOW_MS = 3_600_000  # the allowance is STRONGROOM_BOOKINGS_PER_HOUR in any such window
# A claim still under way has not written its booking yet: its entry is older than this before
# a missing booking means the claim never ran. A claim answers within seconds, or not at all;
# a stalled primary may still run one it was sent, and web servers' clocks differ a little:
# five minutes covers both, and a buyer cut off by a failover waits no longer than that.
PACE_SETTLE_MS = 300_000


@dataclass(frozen=True)
class Settled:
    dropped: int  # entries of claims that never wrote their booking, gone now
    next_ms: int | None  # when the next such entry, too young yet, may go (None: there is none)


def pace_settle(*, client: redis.Redis, owner_id: str, now_ms: int) -> Settled:
    """Drop from the buyer's allowance the entries of claims that never wrote their booking
    (older than PACE_SETTLE_MS, no record under their id: a booking cancelled or moved keeps
    its record, and still counts); say when the next one without a record may go. Two round
    trips (the entries, their records), a third when some go."""
    key = pace_of(owner_id)
    entries = client.zrangebyscore(key, now_ms - PACE_WINDOW_MS, now_ms, withscores=True)
    counted = [(i, int(score)) for i, score in text_scored(entries) if booking_id_room(i)]
    if not counted:
        return Settled(0, None)
    pipe = client.pipeline(transaction=False)
    for booking_id, _score in counted:
        room = booking_id_room(booking_id)
        assert room is not None  # kept above
        pipe.exists(RoomKeys(room).record(booking_id))
    missing = [(i, s) for (i, s), found in zip(counted, pipe.execute(), strict=True) if not found]
    gone = [i for i, score in missing if score <= now_ms - PACE_SETTLE_MS]
    if gone:
        client.zrem(key, *gone)
    young = [score + PACE_SETTLE_MS for i, score in missing if i not in gone]
    return Settled(len(gone), min(young) if young else None)


def _sooner(again_ms: int, settled: Settled) -> int:
    """When the buyer may book again: at the latest `again_ms`, sooner if a claim that never
    wrote its booking holds the place until it may be dropped."""
    return min(again_ms, settled.next_ms) if settled.next_ms else again_ms


def pace_spent_until(*, client: redis.Redis, owner_id: str, now_ms: int) -> dt.datetime | None:
    """None while the buyer may book, else when they may again (one read, their own slot; at
    the limit, entries of claims never written are dropped first and it is read again)."""
    since = f"({now_ms - PACE_WINDOW_MS}"

    def spent() -> int:  # 0 while the buyer may book, else when the oldest entry ages out
        pipe = client.pipeline(transaction=False)
        pipe.zcount(pace_of(owner_id), since, "+inf")
        pipe.zrangebyscore(pace_of(owner_id), since, "+inf", start=0, num=1, withscores=True)
        count, oldest = pipe.execute()
        if int(count) < settings.STRONGROOM_BOOKINGS_PER_HOUR or not oldest:
            return 0
        return int(oldest[0][1]) + PACE_WINDOW_MS

    return _read_settled(client, owner_id, now_ms, spent)


def booking_pace(
    *, client: redis.Redis, owner_id: str, booking_id: str, now: dt.datetime | None = None
) -> dt.datetime | None:
    """Count a new booking against the buyer's hourly allowance
    (STRONGROOM_BOOKINGS_PER_HOUR): None if it may go ahead (a retry of the same booking id is
    not counted again), else when the buyer may book again. One round trip, in the buyer's own
    slot; checked before the claim (which checked `owner_id`), so a refused booking writes
    nothing else."""
    at = to_ms(now) if now is not None else clock_ms()

    def gate() -> int:
        return window_gate(
            client=client,
            key=pace_of(owner_id),
            limit=settings.STRONGROOM_BOOKINGS_PER_HOUR,
            window_ms=PACE_WINDOW_MS,
            at_ms=at,
            event_id=booking_id,
        )

    return _read_settled(client, owner_id, at, gate)


def _read_settled(
    client: redis.Redis, owner_id: str, now_ms: int, read: Callable[[], int]
) -> dt.datetime | None:
    """`read()` (0: the buyer may book, else the ms when they may again); at the limit, the
    entries of claims that never ran are settled and it is read once more."""
    again = read()
    if not again:
        return None
    settled = pace_settle(client=client, owner_id=owner_id, now_ms=now_ms)
    if settled.dropped:
        again = read()  # at the limit only for claims that never ran
    return from_ms(_sooner(again, settled)) if again else None


def booking_pace_return(*, client: redis.Redis, owner_id: str, booking_id: str) -> None:
    """Take a refused booking back out of the buyer's allowance: only bookings made count,
    and a refused request leaves nothing behind."""
    client.zrem(pace_of(owner_id), booking_id)
