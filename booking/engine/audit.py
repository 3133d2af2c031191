"""Reads of the rooms' audit streams (the booking Lua's functions write them): the newest entries
of every room, and the entries of one booking."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import redis
from django.conf import settings

from booking.domain.keys import RoomKeys
from booking.domain.references import reference_derived
from booking.domain.rules import booking_id_room, format_room, room_count
from booking.engine.bookings import MOVE_HOPS  # an older origin is not followed
from strongroom.clock import from_ms, to_ms
from strongroom.decoders import text_or_none, text_stream


@dataclass(frozen=True)
class AuditEntry:
    id: str
    at: dt.datetime
    kind: str
    actor: str
    booking_id: str
    room: int
    detail: str


def _audit_entry(entry_id: str, fields: dict[str, str], room: int) -> AuditEntry:
    """One stream entry as written by the functions' `audit` (missing fields read as empty)."""
    at = from_ms(fields.get("at")) or dt.datetime.fromtimestamp(0, tz=dt.UTC)
    return AuditEntry(
        entry_id,
        at,
        fields.get("kind", ""),
        fields.get("actor", ""),
        fields.get("booking", ""),
        room,
        fields.get("detail", ""),
    )


def audit_entries(
    *, client: redis.Redis, kind: str | None = None, count: int = 50
) -> list[AuditEntry]:
    """The newest audit entries of every room, merged newest first (one pipeline). With a
    kind, up to 10 x count entries per room are scanned for it."""
    count = max(1, min(int(count), 1000))
    per_room = count if kind is None else min(count * 10, settings.STRONGROOM_AUDIT_MAXLEN)
    rooms = range(1, room_count() + 1)
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.xrevrange(RoomKeys(room).audit, count=per_room)
    entries = [
        _audit_entry(entry_id, fields, room)
        for room, stream in zip(rooms, pipe.execute(), strict=True)
        for entry_id, fields in stream
        if kind is None or fields.get("kind") == kind
    ]

    def order(entry: AuditEntry) -> tuple[int, int, int]:
        ms, seq = entry.id.split("-")
        return (to_ms(entry.at), int(ms), int(seq))

    entries.sort(key=order, reverse=True)
    return entries[:count]


def booking_audit(*, client: redis.Redis, booking_id: str) -> list[AuditEntry]:
    """The audit entries of one booking (its room's stream), newest first; [] for a bad id."""
    room = booking_id_room(booking_id)
    if room is None:
        return []
    stream = text_stream(
        client.xrevrange(RoomKeys(room).audit, count=settings.STRONGROOM_AUDIT_MAXLEN)
    )
    return [
        _audit_entry(entry_id, fields, room)
        for entry_id, fields in stream
        if fields.get("booking") == booking_id
    ]


def booking_history(
    *, client: redis.Redis, booking_id: str, moved_from: str = ""
) -> list[AuditEntry]:
    """The audit entries of a booking and of each record it was moved from (`moved_from`, as
    its record says: a move to another room gives it a new id; its claim and earlier moves stay
    under the old ones), newest first. Each earlier record costs one more read."""
    entries = booking_audit(client=client, booking_id=booking_id)
    seen = {booking_id}
    current = moved_from
    while current and current not in seen and len(seen) < MOVE_HOPS:
        seen.add(current)
        entries += booking_audit(client=client, booking_id=current)
        room = booking_id_room(current)
        if room is None:
            break
        current = text_or_none(client.hget(RoomKeys(room).record(current), "moved_from")) or ""
    entries.sort(key=lambda e: (to_ms(e.at), e.id), reverse=True)
    return entries


def references_of(
    *, client: redis.Redis, booking_ids: list[str], known: dict[str, str] | None = None
) -> dict[str, str]:
    """booking id -> the reference people read out (B-7K3Q-9MXD), for the ids of audit entries
    (`known` ones are not read; the others in one pipeline, none when all are known; also an old
    record a move left behind). An id with no record is left out."""
    known = known or {}
    wanted = sorted({i for i in booking_ids if booking_id_room(i) is not None} - set(known))
    if not wanted:
        return dict(known)
    pipe = client.pipeline(transaction=False)
    for booking_id in wanted:
        room = booking_id_room(booking_id)
        assert room is not None
        pipe.hmget(RoomKeys(room).record(booking_id), ["id", "ref"])
    found = dict(known)
    for booking_id, (stored, ref) in zip(wanted, pipe.execute(), strict=True):
        room = booking_id_room(booking_id)
        if stored is not None and room is not None:
            found[booking_id] = text_or_none(ref) or reference_derived(booking_id, room)
    return found


def audit_write(
    *,
    client: redis.Redis,
    room: int,
    kind: str,
    actor: str,
    booking_id: str = "",
    detail: str = "",
    now: dt.datetime | None = None,
) -> None:
    """One entry in the room's audit stream, written from Python (the fields booking.lua's
    `audit` writes) for what no function does: a receipt sent again, a run of wrong codes."""
    client.xadd(
        RoomKeys(room).audit,
        {
            "kind": kind,
            "actor": actor,
            "booking": booking_id,
            "room": format_room(room),
            "detail": detail[:200],
            "at": to_ms(now or dt.datetime.now(tz=dt.UTC)),
        },
        maxlen=settings.STRONGROOM_AUDIT_MAXLEN,
        approximate=True,
    )
