"""The buyer's hourly booking allowance read without counting: a buyer who may not book for a
while may not hold slots meanwhile either (the claim counts; booking.engine.claims)."""

from __future__ import annotations

import datetime as dt

import redis
from django.conf import settings

from booking.domain.keys import pace_of
from strongroom.clock import from_ms

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
