"""Booking and hold records: their types, how the store's hashes and replies decode into
them, and the reads of bookings and holds (by id, by person, by date)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from booking.calls import hold_value_split
from booking.codes import code_for, code_unseal
from booking.keys import (
    CLASS_FACTOR,
    DAY_FACTOR,
    RoomKeys,
    date_index,
    date_indexes,
    date_member,
    date_score,
    day_number,
    member_booking_id,
    person_index,
    person_score,
)
from booking.parser import SlotRequest
from booking.references import reference_derived
from booking.rules import (
    CLASS_DIGIT,
    CLASSES,
    HOURS_PER_DAY,
    booking_id_room,
    format_room,
    room_count,
    season_start,
)
from strongroom.ahead import Command, command, pipeline_replies
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
    code_sealed: str = field(default="", repr=False)  # records made before codes were derived
    code_n: int = field(default=-1, repr=False)
    ref: str = ""

    @property
    def room_label(self) -> str:
        return format_room(self.room)

    @property
    def boxes_label(self) -> str:
        """The boxes as people read them: "3, 4, 5" (mail and calendar files are plain text)."""
        return ", ".join(str(box) for box in self.boxes)

    @property
    def reference(self) -> str:
        """The short reference people read out (B-7K3Q-9MXD), shown instead of the id."""
        return self.ref or reference_derived(self.id, self.room)

    def pickup_code(self) -> str:
        """The pickup code (show it to the owner only); '' if it cannot be read."""
        if self.code_n >= 0:
            return code_for(self.id, self.code_n)
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
        code_n=int(data.get("code_n") or -1),
        ref=data.get("ref", ""),
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


def booking_read(*, booking_id: str) -> list[Command]:
    """What `booking_get` reads (nothing for a malformed id)."""
    room = booking_id_room(booking_id)
    return [] if room is None else [command("HGETALL", RoomKeys(room).record(booking_id))]


def booking_get(*, client: redis.Redis, booking_id: str) -> Booking | None:
    """One booking, or None (also for a malformed id); one HGETALL unless read ahead."""
    read = booking_read(booking_id=booking_id)
    if not read:
        return None
    (reply,) = pipeline_replies(client, read)
    return booking_from_hash(text_hash(reply))


def _bookings(client: redis.Redis, ids: Sequence[str]) -> list[Booking]:
    pipe = client.pipeline(transaction=False)
    wanted = [(i, booking_id_room(i)) for i in ids]
    for booking_id, room in wanted:
        if room is not None:
            pipe.hgetall(RoomKeys(room).record(booking_id))
    return [b for b in (booking_from_hash(h) for h in pipe.execute()) if b is not None]


@dataclass(frozen=True)
class BookingPage:
    """One page of a person's bookings: upcoming first (soonest last day first), then the
    earlier ones (latest first). `total`: all of them; `upcoming`: how many are upcoming."""

    bookings: list[Booking]
    total: int
    upcoming: int
    offset: int
    limit: int

    @property
    def has_next(self) -> bool:
        return self.offset + self.limit < self.total


def bookings_page_read(
    *, owner_id: str, today: dt.date, limit: int = 20, offset: int = 0
) -> list[Command]:
    """The index reads of `bookings_page` (counts and both ranges)."""
    limit, offset = max(1, limit), max(0, offset)
    key, day = person_index(owner_id), day_number(today)
    return [
        command("ZCARD", key),
        command("ZCOUNT", key, day, "+inf"),
        command("ZRANGEBYSCORE", key, day, "+inf", "LIMIT", offset, limit),
        # The page's earlier part starts at offset - upcoming, unknown yet: read up to its end.
        command("ZREVRANGEBYSCORE", key, f"({day}", "-inf", "LIMIT", 0, offset + limit),
    ]


def bookings_page(
    *,
    client: redis.Redis,
    owner_id: str,
    today: dt.date,
    limit: int = 20,
    offset: int = 0,
) -> BookingPage:
    """A page of a person's bookings, every one reachable: upcoming (last day from `today` on)
    by last day, then the earlier ones newest first. Two round trips: the index (counts and
    both ranges in one pipeline; see `indexes_read_commands`), then the records."""
    limit, offset = max(1, limit), max(0, offset)
    reads = bookings_page_read(owner_id=owner_id, today=today, limit=limit, offset=offset)
    total, upcoming, soon, earlier = indexes_read(client=client, reads=reads)
    ids = text_list(soon)[:limit]
    first_earlier = max(0, offset - int(upcoming))
    ids += text_list(earlier)[first_earlier : first_earlier + limit - len(ids)]
    return BookingPage(_bookings(client, ids), int(total), int(upcoming), offset, limit)


def bookings_of(
    *, client: redis.Redis, owner_id: str, limit: int = 50, offset: int = 0
) -> list[Booking]:
    """A person's bookings, latest last day first (the person index, then the records)."""
    key = person_index(owner_id)
    (ids,) = indexes_read(
        client=client, reads=[command("ZREVRANGE", key, offset, offset + limit - 1)]
    )
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

    low = date_score(start)
    high = date_score(end) + DAY_FACTOR - 1
    # The date index is sharded by room: every shard is read, then merged in score order.
    reads = [
        command("ZRANGEBYSCORE", shard, low, high, "WITHSCORES", withscores=True)
        for shard in date_indexes()
    ]
    entries = sorted(
        (int(score), member)
        for members in indexes_read(client=client, reads=reads)
        for member, score in members
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


# --- The person and date indexes ---------------------------------------------------------------
# On one server the claim function writes them with the booking (one atomic call). On a cluster
# they live in other slots than the room's: the claim function puts the id in the room's
# `unindexed` set instead, in the same atomic call, and every reader of a list reads those sets
# with its index reads (same round trip); if any names a booking, it writes that booking's
# entries, only then removes it from the set, and reads again (`indexes_read`).


_INLINE_ATTRIBUTE = "_strongroom_indexes_inline"


def indexes_inline(client: redis.Redis) -> bool:
    """Whether the claim function can write the indexes itself: the server is not in cluster
    mode (where keys of other hash tags cannot meet in one call). Asked once per client."""
    known: bool | None = getattr(client, _INLINE_ATTRIBUTE, None)
    if known is None:
        if isinstance(client, redis.RedisCluster):
            known = False
        else:
            known = str(client.info("cluster").get("cluster_enabled", 0)) != "1"
        setattr(client, _INLINE_ATTRIBUTE, known)
    return known


def indexes_after_claim(*, client: redis.Redis, booking: Booking) -> None:
    """Where the claim could not write the indexes: write them, then take the booking out of
    its room's `unindexed` set. Through one connection (one server) that is one pipeline: the
    server runs and logs it in order, so the ZREM never outlives the entries. On a Redis
    Cluster the entries live on other primaries: they are written first, the ZREM after."""
    unindexed = RoomKeys(booking.room).unindexed
    if isinstance(client, redis.RedisCluster):
        indexes_write(client=client, bookings=[booking])
        client.zrem(unindexed, booking.id)
        return
    pipe = _index_pipeline(client, [booking])
    pipe.zrem(unindexed, booking.id)
    pipe.execute()


def indexes_write(*, client: redis.Redis, bookings: Iterable[Booking]) -> None:
    """Add bookings to the person index and the date index (one pipeline; idempotent)."""
    _index_pipeline(client, bookings).execute()


def _index_pipeline(client: redis.Redis, bookings: Iterable[Booking]) -> Any:
    pipe = client.pipeline(transaction=False)
    by_shard: dict[str, dict[str, int]] = {}
    for booking in bookings:
        pipe.zadd(person_index(booking.owner_id), {booking.id: person_score(booking.dates)})
        shard = by_shard.setdefault(date_index(booking.room), {})
        for date in booking.dates:
            shard[date_member(booking.id, date)] = date_score(date, booking.cls, booking.room)
    for key, members in by_shard.items():
        items = list(members.items())
        for start in range(0, len(items), 5000):
            pipe.zadd(key, dict(items[start : start + 5000]))
    return pipe


def indexes_drain(*, client: redis.Redis, rooms: Sequence[int]) -> int:
    """Index the bookings the rooms' `unindexed` sets still name, then remove them from the
    sets (never before their entries are written: a crash in between leaves them listed here,
    and writing an entry twice changes nothing). Returns how many were drained."""
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.zrange(RoomKeys(room).unindexed, 0, -1)
    waiting = {room: text_list(ids) for room, ids in zip(rooms, pipe.execute(), strict=True) if ids}
    _drain(client, waiting)
    return sum(len(room_ids) for room_ids in waiting.values())


def indexes_read_commands(*, client: redis.Redis, reads: Sequence[Command]) -> list[Command]:
    """What `indexes_read` sends first: on a cluster every room's `unindexed` set, then `reads`."""
    if indexes_inline(client):
        return list(reads)
    rooms = range(1, room_count() + 1)
    return [*(command("ZRANGE", RoomKeys(room).unindexed, 0, -1) for room in rooms), *reads]


def indexes_read(*, client: redis.Redis, reads: Sequence[Command]) -> list[Any]:
    """The replies of the index reads `reads`, with every booking the indexes miss indexed
    first. On one server nothing can be missing: one pipeline as asked. On a cluster the rooms'
    `unindexed` sets ride in the same pipeline; whatever they name (a claim cut off before its
    index step) is indexed and drained, and the reads run again. Served from what was read
    ahead when it was (strongroom/ahead.py)."""
    first = indexes_read_commands(client=client, reads=reads)
    replies = pipeline_replies(client, first)
    unindexed = len(first) - len(reads)
    waiting = {
        room: text_list(ids)
        for room, ids in zip(range(1, unindexed + 1), replies[:unindexed], strict=True)
        if ids
    }
    if not waiting:
        return list(replies[unindexed:])
    _drain(client, waiting)
    return pipeline_replies(client, reads)


def _drain(client: redis.Redis, waiting: dict[int, list[str]]) -> None:
    if not waiting:
        return
    ids = [booking_id for room_ids in waiting.values() for booking_id in room_ids]
    indexes_write(client=client, bookings=_bookings(client, ids))
    pipe = client.pipeline(transaction=False)
    for room, room_ids in waiting.items():
        pipe.zrem(RoomKeys(room).unindexed, *room_ids)
    pipe.execute()
