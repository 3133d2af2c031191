"""The buyer's hourly booking allowance (STRONGROOM_BOOKINGS_PER_HOUR): counted by the claim
function on one server; on a cluster, where the buyer's pace lives in their own slot, counted
here before the claim (`booking_pace`) and given back when it is refused. Also read without
counting: a buyer who may not book for a while may not hold slots meanwhile either."""

from __future__ import annotations

import datetime as dt

import redis
from django.conf import settings

from accounts.gates import window_gate
from booking.domain.keys import pace_of
from strongroom.clock import from_ms, to_ms

PACE_WINDOW_MS = 3_600_000  # the allowance is STRONGROOM_BOOKINGS_PER_HOUR in any such window


def pace_spent_until(*, client: redis.Redis, owner_id: str, now_ms: int) -> dt.datetime | None:
    """None while the buyer may book, else when they may again (one read, their own slot)."""
    since = f"({now_ms - PACE_WINDOW_MS}"
    pipe = client.pipeline(transaction=False)
    pipe.zcount(pace_of(owner_id), since, "+inf")
    pipe.zrangebyscore(pace_of(owner_id), since, "+inf", start=0, num=1, withscores=True)
    count, oldest = pipe.execute()
    if int(count) < settings.STRONGROOM_BOOKINGS_PER_HOUR or not oldest:
        return None
    return from_ms(int(oldest[0][1]) + PACE_WINDOW_MS)


def booking_pace(
    *, client: redis.Redis, owner_id: str, booking_id: str, now: dt.datetime | None = None
) -> dt.datetime | None:
    """Count a new booking against the buyer's hourly allowance
    (STRONGROOM_BOOKINGS_PER_HOUR): None if it may go ahead (a retry of the same booking id is
    not counted again), else when the buyer may book again. One round trip, in the buyer's own
    slot; checked before the claim (which checked `owner_id`), so a refused booking writes
    nothing else."""
    again = window_gate(
        client=client,
        key=pace_of(owner_id),
        limit=settings.STRONGROOM_BOOKINGS_PER_HOUR,
        window_ms=PACE_WINDOW_MS,
        at_ms=to_ms(now) if now is not None else None,
        event_id=booking_id,
    )
    return from_ms(again) if again else None


def booking_pace_return(*, client: redis.Redis, owner_id: str, booking_id: str) -> None:
    """Take a refused booking back out of the buyer's allowance: only bookings made count,
    and a refused request leaves nothing behind."""
    client.zrem(pace_of(owner_id), booking_id)
