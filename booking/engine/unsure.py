"""Bookings the store has not confirmed. On a cluster the claim writes its record marked
`unsure`, and the mark goes once the WAIT and WAITAOF say a replica has it; on one server the
mark is written when the WAITAOF fails. A marked booking is shown as not confirmed yet, without
its code, until a durable call settles it (booking/README.md, "Not confirmed yet")."""

from __future__ import annotations

import datetime as dt
import logging

import redis
from django.utils import timezone

from booking.domain.keys import RoomKeys
from booking.domain.rules import booking_id_room
from strongroom.calls import FunctionSpec
from strongroom.clock import to_ms
from strongroom.durable import (
    Write,
    appendfsync_always,
    durability,
    durable_calls,
    waitaof_supported,
)
from strongroom.libraries import fcall
from strongroom.store import StoreUnavailable

logger = logging.getLogger(__name__)

CLAIM_UNSURE = FunctionSpec(
    "booking_claim_unsure", "CLAIM_UNSURE", ("record", "edition"), ("now_ms",)
)


def marked_from_start(client: redis.Redis, *, inline: bool) -> bool:
    """Whether the claim writes its record marked, for as long as its WAIT and WAITAOF may
    wait: everywhere they can wait, so that no page and no mail sender sees it confirmed
    meanwhile. Not at durability "none" (nothing is waited for), nor on one server at "aof"
    whose appendfsync is "always" (the write is on disk before the reply: the WAITAOF answers
    at once, and the mark would cost each booking a round trip of its own; it is written if the
    WAITAOF fails all the same), nor where there is no WAITAOF (Redis 7.0)."""
    level = durability(client)
    if level == "none" or not waitaof_supported(client):  # nothing waits: nothing to mark
        return False
    return not (inline and level == "aof" and appendfsync_always(client))


def claim_unsure_mark(
    *, client: redis.Redis, booking_id: str, now: dt.datetime | None = None
) -> bool:
    """Mark the record of a claim (on one server: on a cluster the claim wrote its mark) or
    of a move whose WAITAOF fell short (True when it was there to mark). Best effort: the store
    that just fell short may fail this too, and then the answer the buyer got (not confirmed
    yet, try again) is what stands."""
    room = booking_id_room(booking_id)
    if room is None:
        return False
    keys = RoomKeys(room)
    call_keys, call_args = CLAIM_UNSURE.call(
        keys={"record": keys.record(booking_id), "edition": keys.edition},
        args={"now_ms": to_ms(now or timezone.now())},
    )
    try:
        return bool(fcall(client, CLAIM_UNSURE.name, call_keys, call_args))
    except (redis.RedisError, StoreUnavailable) as exc:  # the caller's NotDurable stands
        logger.warning("booking %s not confirmed, and not marked so either: %s", booking_id, exc)
        return False


def booking_settle(*, client: redis.Redis, booking_id: str) -> bool:
    """Confirm a marked booking: a durable call on its primary (a read of the record; the fence
    after it is the write waited for) covers the claim written there before it, and only then
    does the mark go. Raises NotDurable while the store still cannot confirm (the mark stays).
    Returns whether the record is there (a claim lost with a primary is not)."""
    there = record_confirmed(client=client, booking_id=booking_id)
    if there:
        unsure_forget(client=client, booking_id=booking_id)
    return there


def record_confirmed(*, client: redis.Redis, booking_id: str) -> bool:
    """A durable call on the primary of a booking's record (a read of it; the fence after it is
    the write waited for): every write made there before it, a claim's or a move's step, is
    confirmed once it answers. Returns whether the record is there; raises NotDurable while the
    store cannot confirm."""
    room = booking_id_room(booking_id)
    if room is None:
        return False
    record = RoomKeys(room).record(booking_id)
    (there,) = durable_calls(client, [Write(record, ("EXISTS", record))])
    return bool(there)


def unsure_forget(*, client: redis.Redis, booking_id: str) -> None:
    """Take the mark away once a durable call confirmed the claim (a plain write: lost, the
    booking only reads as not confirmed once more)."""
    room = booking_id_room(booking_id)
    if room is not None:
        client.hdel(RoomKeys(room).record(booking_id), "unsure")
