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
from booking.domain.formats import PRIORITY_PENDING, hold_value_split
from booking.domain.keys import RoomKeys, pace_of
from booking.domain.rules import booking_id_room, format_room
from booking.engine.pace import PACE_WINDOW_MS, pace_spent_until
from strongroom import keyspace as ks
from strongroom.ahead import Command, command
from strongroom.calls import FunctionSpec
from strongroom.clock import from_ms, to_ms
from strongroom.decoders import text, text_values
from strongroom.durable import durable_fcall
from strongroom.libraries import fcall

# A grant outlives its hold by this much before it is dropped (booking_priority_keep's margin):
# the clocks of app servers differ a little, and a grant must outlive its hold by every one.
PRIORITY_CLOCK_MARGIN_MS = 5000


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
PRIORITY_SETTLE = FunctionSpec(
    "booking_priority_settle",
    "PRIORITY_SETTLE",
    ("holds", "hold_days", "wait_notices", "edition"),
    ("hold_id", "person", "kept", "now_ms"),
    replies=("granted expiry", "released", "gone", "invalid what"),
)


def priority_pending(person_id: int | str) -> str:
    """The owner a priority hold carries until the person's own slot grants it."""
    return f"{PRIORITY_PENDING}{person_id}"


def priority_grant(
    *, client: redis.Redis, person_id: int, hold_id: str, now: dt.datetime | None = None
) -> str:
    """Make a priority hold the waiting list placed pending for the person theirs, if they may
    have one more: at most STRONGROOM_PRIORITY_HOLDS_PER_BUYER at once. The grant is taken in
    the person's own slot first (one call decides, made durable), and only then is the hold
    made usable in its room; one over the cap is given back there, open to everyone. Each step
    recognises its own earlier success: the mail sender and the buyer's "Book it" may both ask,
    and a retry after a crash between the steps finishes the work.

    A buyer at the hourly booking limit is not given it either (they could not book it, and
    everyone else would find it held until it ran out): it is given back, as over the cap.

    Returns 'granted' (theirs now, or before), 'released' (over the cap: everyone's now),
    'paced' (at the booking limit: everyone's now) or 'gone' (it ended, was booked or given
    back, or is not theirs)."""
    room = booking_id_room(hold_id)
    if room is None:
        return "gone"
    at = now or dt.datetime.now(tz=dt.UTC)
    now_ms = to_ms(at)
    keys = RoomKeys(room)
    grants = ks.BOOKING_PRIORITY_OF.key(person_id=person_id)
    pipe = client.pipeline(transaction=False)
    pipe.hget(keys.holds, hold_id)
    pipe.zrange(grants, 0, -1, withscores=True)
    # The buyer's bookings of the last hour ride along (their own slot: on a cluster not the
    # grant's, so no one call can read both); only at the limit is more read (pace_spent_until).
    pipe.zcount(pace_of(str(person_id)), f"({now_ms - PACE_WINDOW_MS}", "+inf")
    value, noted, booked = pipe.execute()
    hold = hold_value_split(text(value)) if value else None
    expiry = int(float(hold["expiry"])) if hold else 0
    if hold is None or expiry <= now_ms or hold["owner"] != priority_pending(person_id):
        if hold is not None and expiry > now_ms and hold["owner"] == str(person_id):
            return "granted"
        return "gone"
    # Grants of holds that ended or were booked no longer count (dropped here, not only when
    # the buyer next opens a page).
    priority_live(client=client, person_id=person_id, reply=noted, now=at)
    if int(booked) >= settings.STRONGROOM_BOOKINGS_PER_HOUR and pace_spent_until(
        client=client, owner_id=str(person_id), now_ms=now_ms
    ):
        # Given back before any grant is taken: the slot is everyone's at once, the other
        # waiters' notices say so, and this buyer's mail tells them it freed (not "held").
        settled = priority_settle(
            client=client, person_id=person_id, hold_id=hold_id, kept=False, now_ms=now_ms
        )
        return "paced" if settled == "released" else settled
    kept = priority_take(
        client=client, person_id=person_id, hold_id=hold_id, expires_ms=expiry, now_ms=now_ms
    )
    return priority_settle(
        client=client, person_id=person_id, hold_id=hold_id, kept=kept, now_ms=now_ms
    )


def priority_take(
    *, client: redis.Redis, person_id: int, hold_id: str, expires_ms: int, now_ms: int
) -> bool:
    """The person's half of `priority_grant`: whether they may have the hold (True also when
    it was granted before), decided in one call in their own slot and made durable before the
    hold is made usable (a failover must not forget a grant whose hold is in use)."""
    keys, args = PRIORITY_KEEP.call(
        keys={"priority": ks.BOOKING_PRIORITY_OF.key(person_id=person_id)},
        args={
            "hold_id": hold_id,
            "expires_ms": expires_ms,
            "now_ms": now_ms,
            "limit": settings.STRONGROOM_PRIORITY_HOLDS_PER_BUYER,
        },
    )
    answer = PRIORITY_KEEP.answer_of(durable_fcall(client, PRIORITY_KEEP.name, keys, args))
    if answer["status"] not in ("kept", "over"):
        raise ValueError(f"{PRIORITY_KEEP.name}: {answer}")
    return bool(answer["status"] == "kept")


def priority_settle(
    *, client: redis.Redis, person_id: int, hold_id: str, kept: bool, now_ms: int
) -> str:
    """The room's half of `priority_grant`, once the person's slot answered `kept`."""
    keys = RoomKeys(booking_id_room(hold_id) or 0)
    settle_keys, settle_args = PRIORITY_SETTLE.call(
        keys={
            "holds": keys.holds,
            "hold_days": keys.hold_days,
            "wait_notices": keys.wait_notices,
            "edition": keys.edition,
        },
        args={"hold_id": hold_id, "person": str(person_id), "kept": int(kept), "now_ms": now_ms},
    )
    status = str(
        PRIORITY_SETTLE.answer_of(fcall(client, PRIORITY_SETTLE.name, settle_keys, settle_args))[
            "status"
        ]
    )
    if kept and status == "gone":
        # Booked, given back or ended meanwhile: its grant no longer counts.
        client.zrem(ks.BOOKING_PRIORITY_OF.key(person_id=person_id), hold_id)
    return status


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
    """The noted priority holds that are the person's and unexpired (a read of their rooms'
    holds only when one is noted). The notes of holds that are gone, another's or ended a
    while ago (PRIORITY_CLOCK_MARGIN_MS: the clocks of app servers differ a little) are dropped; a
    granted hold not yet made usable is kept, not shown."""
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    pairs = _pairs(reply)
    noted = [(hold_id, booking_id_room(hold_id)) for hold_id, score in pairs
             if score > now_ms - PRIORITY_CLOCK_MARGIN_MS]  # fmt: skip
    dead = [hold_id for hold_id, score in pairs if score <= now_ms - PRIORITY_CLOCK_MARGIN_MS]
    dead += [hold_id for hold_id, room in noted if room is None]
    wanted = [(hold_id, room) for hold_id, room in noted if room is not None]
    live: list[PriorityHold] = []
    if wanted:
        pipe = client.pipeline(transaction=False)
        for hold_id, room in wanted:
            pipe.hget(RoomKeys(room).holds, hold_id)
        for (hold_id, room), value in zip(wanted, text_values(pipe.execute()), strict=True):
            hold = hold_value_split(value) if value else None
            owner = hold["owner"] if hold else ""
            expiry = int(float(hold["expiry"])) if hold else 0
            if owner not in (str(person_id), priority_pending(person_id)) or (
                expiry <= now_ms - PRIORITY_CLOCK_MARGIN_MS
            ):
                dead.append(hold_id)
            elif owner == str(person_id) and expiry > now_ms:
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
