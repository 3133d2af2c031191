"""Booking and hold records: their types, how the store's hashes and replies decode into
them, and the reads of bookings and holds (by id, by person, by date)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

import redis

from booking.calls import hold_value_split
from booking.codes import code_unseal
from booking.keys import (
    CLASS_FACTOR,
    DAY_FACTOR,
    RoomKeys,
    date_indexes,
    date_score,
    member_booking_id,
    person_index,
)
from booking.parser import SlotRequest
from booking.rules import (
    CLASS_DIGIT,
    CLASSES,
    HOURS_PER_DAY,
    booking_id_room,
    format_room,
    season_start,
)
from strongroom.clock import from_ms, to_ms
from strongroom.store import text, text_hash, text_list


@dataclass(frozen=True)
class Slot:
    """One slot reported as taken: by a booking, or (held=True) by another buyer's hold."""

    date: dt.date
    hour: int | None = None
    box: int | None = None
    held: bool = False


@dataclass(frozen=True)
class Booking:
    """One booking record as stored."""

    id: str
    owner_id: str
    cls: str
    room: int
    dates: tuple[dt.date, ...]
    hours: tuple[int, int] | None
    boxes: tuple[int, ...]
    created_at: dt.datetime
    status: str
    collected_dates: tuple[dt.date, ...] = ()
    cancelled_at: dt.datetime | None = None
    cancelled_by: str = ""
    cancel_reason: str = ""
    code_sealed: str = field(default="", repr=False)

    @property
    def room_label(self) -> str:
        return format_room(self.room)

    def pickup_code(self) -> str:
        """The pickup code, unsealed (show it to the owner only); '' if it cannot be read."""
        return code_unseal(self.code_sealed)


@dataclass(frozen=True)
class Hold:
    """Slots kept for one buyer until `expires_at`."""

    id: str
    owner_id: str
    request: SlotRequest
    expires_at: dt.datetime


def _dates(text: str) -> tuple[dt.date, ...]:
    return tuple(dt.date.fromisoformat(part) for part in text.split(",") if part)


def booking_from_hash(data: dict[str, str]) -> Booking | None:
    """A Booking from a record's HGETALL (None for an empty or foreign hash)."""
    if not data.get("id"):
        return None
    cls = data["cls"]
    hours = None if cls == "A" else (int(data["hstart"]), int(data["hend"]))
    return Booking(
        id=data["id"],
        owner_id=data["owner"],
        cls=cls,
        room=int(data["room"]),
        dates=_dates(data["dates"]),
        hours=hours,
        boxes=tuple(int(b) for b in data.get("boxes", "").split(",") if b),
        created_at=from_ms(data["created"]) or dt.datetime.fromtimestamp(0, tz=dt.UTC),
        status=data["status"],
        collected_dates=_dates(data.get("collected", "")),
        cancelled_at=from_ms(data.get("cancelled_at")),
        cancelled_by=data.get("cancelled_by", ""),
        cancel_reason=data.get("cancel_reason", ""),
        code_sealed=data.get("code_sealed", ""),
    )


def flat_to_dict(flat: Sequence[str]) -> dict[str, str]:
    """A Lua HGETALL reply (flat list) as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def slots_from_reply(entries: Sequence[str], request_cls: str) -> list[Slot]:
    """Expand the function's 'day:box:mask:held' entries into one Slot per taken slot."""
    slots: set[Slot] = set()
    start = season_start()
    for entry in entries:
        day, box, mask, held = (int(float(part)) for part in entry.split(":"))
        date = start + dt.timedelta(days=day)
        if request_cls == "A":
            slots.add(Slot(date, None, None, bool(held)))
            continue
        for hour in range(HOURS_PER_DAY):
            if mask & (1 << (23 - hour)):
                slots.add(Slot(date, hour, box or None, bool(held)))
    return sorted(slots, key=lambda s: (s.date, s.box or 0, s.hour or 0, s.held))


def hold_value_parse(value: str) -> tuple[int, str, str, list[int], int, int, list[int]]:
    """A hold's stored value (booking.calls.HOLD_FIELDS) as expiry ms, owner, class, days,
    hour start, hour end, boxes."""
    f = hold_value_split(value)
    return (
        int(float(f["expiry"])),
        f["owner"],
        f["cls"],
        [int(d) for d in f["days"].split(",") if d],
        int(f["hstart"] or 0),
        int(f["hend"] or 0),
        [int(b) for b in f["boxes"].split(",") if b],
    )


def booking_get(*, client: redis.Redis, booking_id: str) -> Booking | None:
    """One booking, or None (also for a malformed id)."""
    room = booking_id_room(booking_id)
    if room is None:
        return None
    return booking_from_hash(text_hash(client.hgetall(RoomKeys(room).record(booking_id))))


def _bookings(client: redis.Redis, ids: Sequence[str]) -> list[Booking]:
    pipe = client.pipeline(transaction=False)
    wanted = [(i, booking_id_room(i)) for i in ids]
    for booking_id, room in wanted:
        if room is not None:
            pipe.hgetall(RoomKeys(room).record(booking_id))
    return [b for b in (booking_from_hash(h) for h in pipe.execute()) if b is not None]


def bookings_of(
    *, client: redis.Redis, owner_id: str, limit: int = 50, offset: int = 0
) -> list[Booking]:
    """A person's bookings, newest first (the person index, then the records)."""
    ids = client.zrange(person_index(owner_id), offset, offset + limit - 1, desc=True)
    return _bookings(client, text_list(ids))


def bookings_between(
    *,
    client: redis.Redis,
    start: dt.date,
    end: dt.date,
    cls: str | None = None,
    limit: int = 500,
) -> list[Booking]:
    """Bookings with a day from `start` to `end` (and of class `cls`), by date, class, room.
    One ZRANGEBYSCORE per shard of the date index (one pipeline), then the records."""
    if cls is not None and cls not in CLASSES:
        raise ValueError(f"no class {cls!r}")
    if end < start:
        return []
    pipe = client.pipeline(transaction=False)
    low = date_score(start)
    high = date_score(end) + DAY_FACTOR - 1
    for shard in date_indexes():
        pipe.zrangebyscore(shard, low, high, withscores=True)
    entries = sorted(
        (int(score), member) for members in pipe.execute() for member, score in members
    )
    ids: dict[str, None] = {}
    for score, member in entries:
        if cls is not None and score % DAY_FACTOR // CLASS_FACTOR != CLASS_DIGIT[cls]:
            continue
        ids.setdefault(member_booking_id(member))
        if len(ids) >= limit:
            break
    return _bookings(client, list(ids)[:limit])


def hold_get(*, client: redis.Redis, hold_id: str, now: dt.datetime | None = None) -> Hold | None:
    """A live hold, or None when expired, released or unknown."""
    room = booking_id_room(hold_id)
    if room is None:
        return None
    value = client.hget(RoomKeys(room).holds, hold_id)
    if value is None:
        return None
    expiry, owner, cls, days, start, end, boxes = hold_value_parse(text(value))
    if expiry <= to_ms(now or dt.datetime.now(tz=dt.UTC)):
        return None
    dates = tuple(season_start() + dt.timedelta(days=d) for d in days)
    request = SlotRequest(cls, room, dates, None if cls == "A" else (start, end), tuple(boxes))
    expires = from_ms(expiry)
    assert expires is not None
    return Hold(hold_id, owner, request, expires)


def room_sets_read(
    client: redis.Redis, rooms: Sequence[int]
) -> dict[int, tuple[set[str], set[str]]]:
    """Registry and ledger of each room (one pipeline); rooms with neither are left out."""
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.smembers(RoomKeys(room).registry)
        pipe.smembers(RoomKeys(room).ledger)
    replies = pipe.execute()
    found = {}
    for index, room in enumerate(rooms):
        registered, ledger = replies[2 * index], replies[2 * index + 1]
        if registered or ledger:
            found[room] = (registered, ledger)
    return found
