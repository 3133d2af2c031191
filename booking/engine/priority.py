"""A buyer's priority holds from the waiting list, noted in the buyer's own slot so that every
page can show them in a banner: read with the session and the person record (one round trip
for all three), then checked against the rooms' holds only when there is one."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings

from accounts.extensions import IdentityRead
from booking.domain.formats import hold_value_split
from booking.domain.keys import RoomKeys
from booking.domain.rules import booking_id_room, format_room
from booking.engine.holds import booking_hold_release
from strongroom import keyspace as ks
from strongroom.ahead import Command, command
from strongroom.calls import FunctionSpec
from strongroom.clock import from_ms, to_ms
from strongroom.store import fcall, text_values


@dataclass(frozen=True)
class PriorityHold:
    hold_id: str
    room_label: str
    until: dt.datetime


def priority_read(*, person_id: int) -> Command:
    """The person's noted priority holds (what rides with their identity)."""
    return command("ZRANGE", ks.BOOKING_PRIORITY_OF.key(person_id=person_id), 0, -1, "WITHSCORES")


PRIORITY_KEEP = FunctionSpec(
    "booking_priority_keep",
    "PRIORITY_KEEP",
    ("priority",),
    ("hold_id", "expires_ms", "now_ms", "limit"),
    replies=("kept", "over", "invalid what"),
)


def priority_note(*, client: redis.Redis, person_id: int, hold_id: str, expires_ms: int) -> bool:
    """Note a priority hold the waiting list placed for the person, if they may keep it: at
    most STRONGROOM_PRIORITY_HOLDS_PER_BUYER live at once (one call in the person's slot
    decides). One over is given back here, the slot open to everyone; False then. Noting the
    same hold again (the mail sender retries) answers as the first time."""
    keys, args = PRIORITY_KEEP.call(
        keys={"priority": ks.BOOKING_PRIORITY_OF.key(person_id=person_id)},
        args={
            "hold_id": hold_id,
            "expires_ms": expires_ms,
            "now_ms": to_ms(dt.datetime.now(tz=dt.UTC)),
            "limit": settings.STRONGROOM_PRIORITY_HOLDS_PER_BUYER,
        },
    )
    if PRIORITY_KEEP.answer_of(fcall(client, PRIORITY_KEEP.name, keys, args))["status"] == "kept":
        return True
    booking_hold_release(client=client, owner_id=str(person_id), hold_id=hold_id)
    return False


PRIORITY_READ = IdentityRead("priority", priority_read)


def _pairs(reply: Any) -> list[tuple[str, float]]:
    """ZRANGE ... WITHSCORES as (member, score), whichever shape the client gave it."""
    items = list(reply or [])
    if items and isinstance(items[0], (list, tuple)):
        return [(str(m), float(s)) for m, s in items]
    flat = text_values(items)
    return [(str(flat[i]), float(flat[i + 1] or 0)) for i in range(0, len(flat) - 1, 2)]


def priority_live(
    *, client: redis.Redis, person_id: int, reply: Any, now: dt.datetime | None = None
) -> list[PriorityHold]:
    """The noted priority holds that are still the person's and unexpired (a read of their
    rooms' holds only when one is noted; those that ended, or were booked, are dropped)."""
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    noted = [(hold_id, score) for hold_id, score in _pairs(reply) if score > now_ms]
    rooms = [(hold_id, booking_id_room(hold_id)) for hold_id, _score in noted]
    wanted = [(hold_id, room) for hold_id, room in rooms if room is not None]
    live: list[PriorityHold] = []
    dead = [hold_id for hold_id, _score in _pairs(reply) if (hold_id, _score) not in noted]
    if wanted:
        pipe = client.pipeline(transaction=False)
        for hold_id, room in wanted:
            pipe.hget(RoomKeys(room).holds, hold_id)
        for (hold_id, room), value in zip(wanted, text_values(pipe.execute()), strict=True):
            hold = hold_value_split(value) if value else None
            expiry = int(float(hold["expiry"])) if hold else 0
            if hold is None or hold["owner"] != str(person_id) or expiry <= now_ms:
                dead.append(hold_id)
                continue
            until = from_ms(expiry)
            assert until is not None
            live.append(PriorityHold(hold_id, format_room(room), until))
    if dead:
        client.zrem(ks.BOOKING_PRIORITY_OF.key(person_id=person_id), *dead)
    return sorted(live, key=lambda p: p.until)


def priority_holds(
    *, client: redis.Redis, person_id: int, along: dict[str, Any] | None
) -> list[PriorityHold]:
    """The banner's holds: from the reply read along with the identity, else read now."""
    if along is not None and "priority" in along:
        reply = along["priority"]
    else:
        args, options = priority_read(person_id=person_id)
        reply = client.execute_command(*args, **options)
    return priority_live(client=client, person_id=person_id, reply=reply)
