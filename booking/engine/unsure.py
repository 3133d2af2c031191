"""Bookings the store has not confirmed: the claim writes its record marked `unsure`, and the
mark goes once a WAITAOF says the claim is safe. A claim whose WAITAOF fell short (a primary
without its replica, a disk too slow) keeps it: shown as not confirmed yet, without its code,
until a later durable call settles it (booking/README.md, "Not confirmed yet")."""

from __future__ import annotations

import redis

from booking.domain.keys import RoomKeys
from booking.domain.rules import booking_id_room
from strongroom.durable import Write, durable_calls


def booking_settle(*, client: redis.Redis, booking_id: str) -> bool:
    """Confirm a marked booking: a durable call on its primary (a read of the record; the fence
    after it is the write waited for) covers the claim written there before it, and only then
    does the mark go. Raises NotDurable while the store still cannot confirm (the mark stays).
    Returns whether the record is there (a claim lost with a primary is not)."""
    room = booking_id_room(booking_id)
    if room is None:
        return False
    record = RoomKeys(room).record(booking_id)
    (there,) = durable_calls(client, [Write(record, ("EXISTS", record))])
    if there:
        unsure_forget(client=client, booking_id=booking_id)
    return bool(there)


def unsure_forget(*, client: redis.Redis, booking_id: str) -> None:
    """Take the mark away once a durable call confirmed the claim (a plain write: lost, the
    booking only reads as not confirmed once more)."""
    room = booking_id_room(booking_id)
    if room is not None:
        client.hdel(RoomKeys(room).record(booking_id), "unsure")
