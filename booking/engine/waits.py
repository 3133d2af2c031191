"""The waiting list: be told when a sold-out slot frees.

A wait is one slot (class A: a day; B: an hour range on a day; C: one box's hours on a day)
kept in the room's `waits` sorted set, in the order people asked. The cancel function (and
the sweep, for holds that expired) tells the waiters whose slot is free in the same atomic
call that freed it: a notice, a mail, and for the first a priority hold of
STRONGROOM_WAIT_HOLD_SECONDS. Each buyer's waits are also listed under their id (to show them
and to bound them, STRONGROOM_WAITS_PER_BUYER); everything about a day goes at the day's end.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import redis
from django.conf import settings

from booking.domain.formats import (
    NOTICE_FIELDS,
    WAIT_FIELDS,
    fields_join,
    fields_split,
)
from booking.domain.keys import RoomKeys
from booking.domain.records import Booking
from booking.domain.rules import (
    calendar_date,
    calendar_day,
    check_owner_id,
    first_bookable_day,
    format_room,
    room_count,
    season_days,
    site_today,
    site_zone,
)
from booking.engine.bookings import booking_covering, bookings_in_room_since
from booking.engine.holds import booking_hold_release
from strongroom import keyspace as ks
from strongroom.ahead import Command, command, pipeline_replies
from strongroom.calls import FunctionSpec
from strongroom.clock import from_ms, to_ms
from strongroom.decoders import text_list, text_values
from strongroom.libraries import fcall

WAIT = FunctionSpec(
    "booking_wait",
    "WAIT",
    ("waits", "holds", "hold_days", "gone", "closures", "edition"),
    ("person", "cls", "day", "hstart", "hend", "box", "now_ms", "limit", "months",
     "first_day"),
    replies=("ok", "free", "limit", "gone", "closed reason", "invalid what"),
)  # fmt: skip
# more_keys of WAIT: the inventory of the waited day's month (ARGV months names it).
WAIT_RESERVE = FunctionSpec(
    "booking_wait_reserve",
    "WAIT_RESERVE",
    ("index",),
    ("entry", "score", "trim_before", "limit"),
    replies=("reserved", "already", "limit", "invalid what"),
)
WAITS_CHECK = FunctionSpec(
    "booking_waits_check",
    "WAITS_CHECK",
    (
        "waits",
        "wait_notices",
        "holds",
        "outbox",
        "hold_days",
        "edition",
        "closures",
    ),
    ("now_ms", "first_day", "priority_hold_id", "priority_hold_ms", "room", "months", "day_starts"),
    reply=("told", "left"),
)
# more_keys of WAITS_CHECK: the inventories of the months ARGV months names, class A's first,
# then B's, then C's (each in the order of the months).


def day_start_ms(date: dt.date) -> int:
    return to_ms(dt.datetime.combine(date, dt.time(), tzinfo=site_zone()))


@dataclass(frozen=True)
class Wait:
    """One slot a buyer waits for."""

    room: int
    cls: str
    date: dt.date
    hours: tuple[int, int] | None = None
    box: int | None = None

    @property
    def room_label(self) -> str:
        return format_room(self.room)


def wait_member(*, owner_id: str, wait: Wait) -> str:
    """The wait as the room's waits hold it (WAIT_FIELDS)."""
    start, end = wait.hours or (0, 0)
    return fields_join(
        {"person": owner_id, "cls": wait.cls, "day": calendar_day(wait.date), "hstart": start,
         "hend": end, "box": wait.box or 0},
        WAIT_FIELDS,
    )  # fmt: skip


def wait_of(room: int, member: str) -> tuple[str, Wait]:
    """The person and the wait of a member of the room's waits (WAIT_FIELDS)."""
    f = fields_split(member, WAIT_FIELDS)
    date = calendar_date(int(f["day"]))
    hours = None if f["cls"] == "A" else (int(f["hstart"]), int(f["hend"]))
    return f["person"], Wait(room, f["cls"], date, hours, int(f["box"]) or None)


@dataclass(frozen=True)
class Notice:
    """A told wait's notice: when, and the priority hold (the first in line's, or '') until
    when it lasts."""

    told_at: dt.datetime | None
    hold_id: str
    expires_at: dt.datetime | None


def notice_of(value: str | None) -> Notice | None:
    """A notice as stored (NOTICE_FIELDS; notices written before a field was added lack it)."""
    if value is None:
        return None
    parts = [*value.split("|"), *[""] * len(NOTICE_FIELDS)][: len(NOTICE_FIELDS)]
    f = dict(zip(NOTICE_FIELDS, parts, strict=True))
    return Notice(from_ms(f["told"]), f["hold_id"], from_ms(f["expiry"] or None))


def waits_join(
    *, client: redis.Redis, owner_id: str, waits: Sequence[Wait], now: dt.datetime | None = None
) -> list[str]:
    """`wait_join` for each of `waits` in turn, the buyer's bookings in each room read once."""
    own = {}
    for room in {w.room for w in waits}:
        since = min(w.date for w in waits if w.room == room)
        own[room] = bookings_in_room_since(client=client, owner_id=owner_id, room=room, since=since)
    return [
        wait_join(client=client, owner_id=owner_id, wait=w, now=now, own=own[w.room]) for w in waits
    ]


def wait_join(
    *,
    client: redis.Redis,
    owner_id: str,
    wait: Wait,
    now: dt.datetime | None = None,
    own: Sequence[Booking] | None = None,
) -> str:
    """Ask to be told when `wait`'s slot frees. Returns 'ok' (also when already waiting),
    'free' (it is free: book it), 'own' (the buyer booked some of it themselves), 'limit'
    (too many waits), 'closed' (staff closed it) or 'invalid'. `own`: as `booking_covering`
    takes it."""
    check_owner_id(owner_id)
    if not 1 <= wait.room <= room_count() or wait.date not in season_days():
        return "invalid"
    mine = booking_covering(
        client=client, owner_id=owner_id, room=wait.room, cls=wait.cls, dates=[wait.date],
        hours=wait.hours, boxes=[wait.box] if wait.box else [], own=own,
    )  # fmt: skip
    if mine is not None:
        return "own"
    first = first_bookable_day(now)
    index = ks.BOOKING_WAITS_BY_PERSON.key(owner_id=owner_id)
    member = wait_member(owner_id=owner_id, wait=wait)
    entry = f"{format_room(wait.room)}|{member}"
    # The buyer's place first, in their own slot and bounded there in one call; the room's wait
    # next; the place given back if the room refuses (a crash in between leaves a place that
    # counts until its day ends, never a wait over the bound).
    tomorrow = site_today(now) + dt.timedelta(days=1)
    reserve_keys, reserve_args = WAIT_RESERVE.call(
        keys={"index": index},
        args={
            "entry": entry,
            "score": day_start_ms(wait.date),
            "trim_before": day_start_ms(tomorrow),
            "limit": settings.STRONGROOM_WAITS_PER_BUYER,
        },
    )
    reserved = WAIT_RESERVE.answer_of(fcall(client, WAIT_RESERVE.name, reserve_keys, reserve_args))[
        "status"
    ]
    if reserved == "limit":
        return "limit"
    if reserved not in ("reserved", "already"):
        return "invalid"
    keys = RoomKeys(wait.room)
    start, end = wait.hours or (0, 0)
    inventories, months = keys.inventories(wait.cls, [wait.date])
    call = WAIT.call(
        keys={
            "waits": keys.waits,
            "edition": keys.edition,
            "holds": keys.holds,
            "hold_days": keys.hold_days,
            "gone": keys.gone,
            "closures": keys.closures,
        },
        args={
            "person": owner_id,
            "cls": wait.cls,
            "day": calendar_day(wait.date),
            "hstart": start,
            "hend": end,
            "box": wait.box or 0,
            "now_ms": to_ms(now or dt.datetime.now(tz=dt.UTC)),
            "limit": settings.STRONGROOM_WAITS_PER_BUYER,
            "months": months,
            "first_day": first,
        },
        more_keys=inventories,
    )
    status = WAIT.answer_of(fcall(client, WAIT.name, *call))["status"]
    if status != "ok":
        if reserved == "reserved":
            client.zrem(index, entry)
        return str(status)
    client.sadd(ks.BOOKING_WAIT_ROOMS.key(), format_room(wait.room))
    return "ok"


@dataclass(frozen=True)
class WaitStatus:
    """A buyer's wait as their pages show it: still waiting, or told (with their priority hold
    while it lasts, or until when the first in line has it)."""

    wait: Wait
    entry: str
    told_at: dt.datetime | None = None
    hold_id: str = ""
    priority_until: dt.datetime | None = None

    @property
    def told(self) -> bool:
        return self.told_at is not None

    @property
    def mine(self) -> bool:
        """The priority hold is this buyer's."""
        return bool(self.hold_id)


def waits_of_read(*, owner_id: str) -> list[Command]:
    """What `waits_of` reads first: the buyer's index of waits."""
    return [command("ZRANGE", ks.BOOKING_WAITS_BY_PERSON.key(owner_id=owner_id), 0, -1)]


def waits_of(
    *, client: redis.Redis, owner_id: str, now: dt.datetime | None = None
) -> list[WaitStatus]:
    """The buyer's waits and notices, by day (two round trips; one when there are none)."""
    (entries_read,) = pipeline_replies(client, waits_of_read(owner_id=owner_id))
    entries = text_list(entries_read)
    if not entries:
        return []
    parsed = []
    pipe = client.pipeline(transaction=False)
    for entry in entries:
        room_text, member = entry.split("|", 1)
        room = int(room_text)
        parsed.append((entry, room, member))
        pipe.zscore(RoomKeys(room).waits, member)
        pipe.hget(RoomKeys(room).wait_notices, member)
    replies = pipe.execute()
    first = first_bookable_day(now)
    found = []
    for i, (entry, room, member) in enumerate(parsed):
        waiting, notice = replies[2 * i], notice_of(text_values([replies[2 * i + 1]])[0])
        _person, wait = wait_of(room, member)
        if calendar_day(wait.date) < first or (waiting is None and notice is None):
            continue
        if notice is None:
            found.append(WaitStatus(wait, entry))
            continue
        found.append(WaitStatus(wait, entry, notice.told_at, notice.hold_id, notice.expires_at))
    return found


def wait_leave(*, client: redis.Redis, owner_id: str, entry: str) -> bool:
    """Stop waiting (or dismiss the notice, giving back the priority hold it came with);
    False when `entry` is not the buyer's."""
    index = ks.BOOKING_WAITS_BY_PERSON.key(owner_id=owner_id)
    if not isinstance(entry, str) or len(entry) > 100 or client.zscore(index, entry) is None:
        return False
    room_text, member = entry.split("|", 1)
    keys = RoomKeys(int(room_text))
    pipe = client.pipeline(transaction=True)
    pipe.hget(keys.wait_notices, member)
    pipe.zrem(keys.waits, member)
    pipe.hdel(keys.wait_notices, member)
    notice = notice_of(text_values([pipe.execute()[0]])[0])
    client.zrem(index, entry)
    if notice is not None and notice.hold_id:
        # Declined: the slot held for this buyer goes back to everyone at once.
        booking_hold_release(client=client, owner_id=owner_id, hold_id=notice.hold_id)
    return True


def waits_forget(*, client: redis.Redis, owner_id: str, room: int, members: list[str]) -> None:
    """Take waits a booking fulfilled (the claim already took them out of the room) out of
    the buyer's own index, so that they no longer count towards the buyer's limit."""
    entries = [f"{format_room(room)}|{member}" for member in text_list(members)]
    client.zrem(ks.BOOKING_WAITS_BY_PERSON.key(owner_id=owner_id), *entries)
