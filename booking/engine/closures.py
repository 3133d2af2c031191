"""Closures: staff close one room, a range of rooms or the whole building for days or hours,
with a reason (a safe under repair, a public holiday). Each closed room keeps the closure in its
own `closures` hash, so the claim, hold, wait and move functions refuse a closed slot in the
same atomic call that checks it is free; `{closures}:all` lists them for the staff page.

Bookings already inside a new closure are listed first (`closure_bookings`); staff cancel them
in one action (`closure_bookings_cancel`: each buyer gets the cancellation mail and sees the
reason in My bookings). Opening again is `closure_remove`."""

from __future__ import annotations

import datetime as dt
import re
import secrets
from collections.abc import Sequence

import redis

from booking.domain.closures import Closure, closures_parse
from booking.domain.formats import CLOSURE_FIELDS, fields_join
from booking.domain.keys import RoomKeys
from booking.domain.records import Booking
from booking.domain.rules import calendar_day, reason_clean, room_count
from booking.engine.bookings import bookings_between
from booking.engine.cancel import booking_cancel
from booking.engine.moves_rooms import moves_settle_into
from strongroom import keyspace as ks
from strongroom.audit import staff_audit_record
from strongroom.calls import FunctionSpec
from strongroom.clock import to_ms
from strongroom.decoders import text_hash
from strongroom.libraries import fcalls

CLOSURE_AUDIT_KINDS = ("closure_add", "closure_remove")  # staff actions (booking.apps)
_ID_RE = re.compile(r"[A-Za-z0-9_-]{8,32}")
MAX_CLOSURE_DAYS = 366
CLOSURE_WRITE = FunctionSpec(
    "booking_closure_write",
    "CLOSURE_WRITE",
    ("closures", "edition"),
    ("closure_id", "value"),
    replies=("written", "same", "invalid what"),
)


def closure_new_id() -> str:
    return secrets.token_urlsafe(9)


def _check(closure: Closure) -> None:
    if not _ID_RE.fullmatch(closure.id):
        raise ValueError("not a closure id")
    if not closure.rooms or not all(1 <= r <= room_count() for r in closure.rooms):
        raise ValueError("no such room")
    if not 0 <= (closure.last - closure.first).days < MAX_CLOSURE_DAYS:
        raise ValueError("a closure is 1 to 366 days, first to last")
    if closure.hours is not None and not 0 <= closure.hours[0] < closure.hours[1] <= 24:
        raise ValueError("hours run from 0 to 24, start before end")
    if not closure.reason:
        raise ValueError("a closure has a reason")


def _rooms_write(client: redis.Redis, closure: Closure, value: str) -> None:
    """The closure into each of its rooms ('': out of them), each with the room's edition, all
    in one pipeline."""
    calls = []
    for room in closure.rooms:
        keys = RoomKeys(room)
        call_keys, call_args = CLOSURE_WRITE.call(
            keys={"closures": keys.closures, "edition": keys.edition},
            args={"closure_id": closure.id, "value": value},
        )
        calls.append((CLOSURE_WRITE.name, call_keys, call_args))
    for reply in fcalls(client, calls):
        if CLOSURE_WRITE.answer_of(reply)["status"] == "invalid":
            raise ValueError(f"closure {closure.id}: {reply}")


def closure_bookings(*, client: redis.Redis, closure: Closure) -> list[Booking]:
    """The confirmed bookings with a slot inside `closure` (two round trips: the date index,
    then the records)."""
    found = bookings_between(client=client, start=closure.first, end=closure.last, limit=10_000)
    return [b for b in found if b.status == "confirmed" and closure.covers(b)]


def closure_add(
    *, client: redis.Redis, actor_id: str, closure: Closure, now: dt.datetime | None = None
) -> Closure:
    """Close: each room's closures hash (the functions refuse its slots from now on), then the
    list; the same id written again changes nothing. Audited."""
    closure = Closure(
        closure.id, tuple(sorted(set(closure.rooms))), closure.first, closure.last,
        closure.hours, reason_clean(closure.reason), actor_id,
        now or dt.datetime.now(tz=dt.UTC),
    )  # fmt: skip
    _check(closure)
    start, end = closure.hours or (0, 24)
    value = fields_join(
        {"first": calendar_day(closure.first), "last": calendar_day(closure.last),
         "hstart": start, "hend": end, "reason": closure.reason.replace("|", "/")},
        CLOSURE_FIELDS,
    )  # fmt: skip
    _rooms_write(client, closure, value)
    at = to_ms(closure.at or dt.datetime.now(tz=dt.UTC))
    listed = "|".join(
        [",".join(map(str, closure.rooms)), closure.first.isoformat(), closure.last.isoformat(),
         str(start), str(end), actor_id, str(at), closure.reason]
    )  # fmt: skip
    # Listed once: the same closure sent again (a double press) is not audited twice.
    first_time = client.hsetnx(ks.CLOSURES_ALL.key(), closure.id, listed)
    # A move into these rooms under way now held its slots before the closure: one into the
    # closed slots is settled at once (finished if its old room has decided, so that the
    # closure lists it; else stopped). Any move after the closure is refused by the room.
    moves_settle_into(client=client, rooms=closure.rooms, covers=closure.covers)
    if first_time:
        staff_audit_record(
            client=client, kind="closure_add", actor_id=actor_id, subject=closure.rooms_label,
            detail=f"{closure.first}..{closure.last} {start}-{end}: {closure.reason}", now=now,
        )  # fmt: skip
    return closure


def closures_list(*, client: redis.Redis) -> list[Closure]:
    """Every closure, soonest first."""
    return closures_parse(text_hash(client.hgetall(ks.CLOSURES_ALL.key())))


def closed_slots(closures: Sequence[Closure], cls: str, date: dt.date) -> int:
    """How many slots of class `cls` the closures take off sale on `date` (their capacity is
    left out of occupancy figures)."""
    total = 0
    for closure in closures:
        if closure.first <= date <= closure.last:
            start, end = closure.hours or (0, 24)
            per_room = {"A": 1, "B": end - start, "C": (end - start) * 100}[cls]
            total += len(closure.rooms) * per_room
    return total


def closure_get(*, client: redis.Redis, closure_id: str) -> Closure | None:
    return next((c for c in closures_list(client=client) if c.id == closure_id), None)


def closure_remove(
    *, client: redis.Redis, actor_id: str, closure_id: str, now: dt.datetime | None = None
) -> bool:
    """Open again: the closure leaves its rooms and the list (idempotent). Audited."""
    closure = closure_get(client=client, closure_id=closure_id)
    if closure is None:
        return False
    _rooms_write(client, closure, "")
    client.hdel(ks.CLOSURES_ALL.key(), closure.id)
    staff_audit_record(
        client=client, kind="closure_remove", actor_id=actor_id, subject=closure.rooms_label,
        detail=f"{closure.first}..{closure.last}: {closure.reason}", now=now,
    )  # fmt: skip
    return True


def closure_bookings_cancel(
    *,
    client: redis.Redis,
    actor_id: str,
    closure: Closure,
    booking_ids: Sequence[str] | None = None,
    now: dt.datetime | None = None,
) -> int:
    """Cancel the listed bookings that are still inside `closure` (None: every one inside
    now), with its reason: each buyer is mailed (the cancel function queues it) and sees the
    reason in My bookings."""
    inside = [b.id for b in closure_bookings(client=client, closure=closure)]
    cancelled = 0
    for booking_id in inside if booking_ids is None else booking_ids:
        if booking_id not in inside:
            continue
        # Not followed if it moved meanwhile: its new place may well be outside the closure.
        done = booking_cancel(
            client=client, booking_id=booking_id, actor_id=actor_id, actor_is_staff=True,
            reason=closure.reason, now=now, follow_moves=False,
        )  # fmt: skip
        cancelled += done.ok
    return cancelled
