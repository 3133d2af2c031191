"""Reads of the booking engine. Availability reads are one round trip each (one pipeline)."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import redis
from django.conf import settings
from redis.client import NEVER_DECODE

from booking.domain import (
    BOXES_PER_ROOM,
    CLASS_DIGIT,
    CLASSES,
    HOURS_PER_DAY,
    SLOTS_PER_DAY,
    Booking,
    Hold,
    SlotRequest,
    booking_from_hash,
    booking_id_room,
    day_refusal,
    from_ms,
    hour_mask,
    in_season,
    room_count,
    season_day,
    season_days,
    season_end,
    season_key,
    season_start,
    site_today,
    to_ms,
)
from booking.keys import (
    CLASS_FACTOR,
    DAY_FACTOR,
    RoomKeys,
    date_indexes,
    date_score,
    member_booking_id,
    person_index,
)
from strongroom import keyspace as ks
from strongroom.store import text, text_hash, text_list, text_stream

FULL = (1 << HOURS_PER_DAY) - 1


@dataclass(frozen=True)
class DayAvailability:
    date: dt.date
    state: str  # "available" | "sold_out" | "not_bookable"
    reason: str = ""  # "" | "past" | "today" | "outside_season"


@dataclass(frozen=True)
class DayOccupancy:
    date: dt.date
    booked: int
    capacity: int


@dataclass(frozen=True)
class Occupancy:
    cls: str
    days: tuple[DayOccupancy, ...]
    booked: int
    capacity: int


@dataclass(frozen=True)
class InventoryKey:
    key: str
    room: int
    cls: str
    season: str


@dataclass(frozen=True)
class AuditEntry:
    id: str
    at: dt.datetime
    kind: str
    actor: str
    booking_id: str
    room: int
    detail: str


def _check(cls: str, room: int) -> None:
    if cls not in CLASSES:
        raise ValueError(f"no class {cls!r}")
    if isinstance(room, bool) or not isinstance(room, int) or not 1 <= room <= room_count():
        raise ValueError(f"no room {room!r}")


def _field_offsets(cls: str, day: int, boxes: Sequence[int]) -> list[int]:
    if cls == "A":
        return [day]
    if cls == "B":
        return [day * HOURS_PER_DAY]
    return [(day * BOXES_PER_ROOM + box - 1) * HOURS_PER_DAY for box in boxes]


def _parse_hold_value(value: str) -> tuple[int, str, str, list[int], int, int, list[int]]:
    expiry, owner, cls, days, start, end, boxes = value.split("|")
    return (
        int(float(expiry)),
        owner,
        cls,
        [int(d) for d in days.split(",") if d],
        int(start or 0),
        int(end or 0),
        [int(b) for b in boxes.split(",") if b],
    )


def _held_masks(
    holds: dict[str, str], cls: str, owner_id: str | None, now_ms: int
) -> dict[tuple[int, int], int]:
    """(day, box) -> hour mask (1 for A) held by other buyers' unexpired holds."""
    held: dict[tuple[int, int], int] = {}
    for value in holds.values():
        expiry, owner, hold_cls, days, start, end, boxes = _parse_hold_value(value)
        if expiry <= now_ms or hold_cls != cls or (owner_id is not None and owner == owner_id):
            continue
        mask = 1 if cls == "A" else hour_mask(start, end)
        for day in days:
            for box in boxes if cls == "C" else [0]:
                held[(day, box)] = held.get((day, box), 0) | mask
    return held


# A day's taken slots as the bitmap stores them (hour 0 in the top bit of each 24-bit mask):
# class C 300 bytes (box 1 first), class B 3 bytes; class A is given one byte, 0 or 1.
_DAY_BYTES = {"A": 1, "B": 3, "C": BOXES_PER_ROOM * 3}


def _runs(days: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted season days as runs of consecutive days: (first, last) each."""
    runs: list[tuple[int, int]] = []
    for day in days:
        if runs and runs[-1][1] == day - 1:
            runs[-1] = (runs[-1][0], day)
        else:
            runs.append((day, day))
    return runs


def _held_into(cls: str, taken: dict[int, bytes], held: dict[tuple[int, int], int]) -> None:
    """Add other buyers' held slots to the days read, in place."""
    for (day, box), mask in held.items():
        if day not in taken:
            continue
        if cls == "A":
            taken[day] = b"\x01"
            continue
        at = (box - 1) * 3 if cls == "C" else 0
        value = bytearray(taken[day])
        value[at : at + 3] = (int.from_bytes(value[at : at + 3]) | mask).to_bytes(3)
        taken[day] = bytes(value)


def _read_days(
    client: redis.Redis,
    cls: str,
    room: int,
    days: Sequence[int],
    owner_id: str | None,
    now: dt.datetime | None,
) -> dict[int, bytes]:
    """Season day -> its taken slots (booked, or held by another buyer's unexpired hold) as
    bytes (see _DAY_BYTES), in one round trip: one GETRANGE of raw bytes per run of
    consecutive days (a month of class C is 9,300 bytes), and the room's holds."""
    keys = RoomKeys(room)
    width = _DAY_BYTES[cls]
    runs = _runs(sorted(set(days)))
    pipe = client.pipeline(transaction=False)
    for first, last in runs:
        if cls == "A":  # one bit per day
            start, end = first // 8, last // 8
        else:
            start, end = first * width, (last + 1) * width - 1
        raw = {NEVER_DECODE: True}  # bytes, whatever the client's decode_responses
        pipe.execute_command("GETRANGE", keys.inventory(cls), start, end, **raw)
    pipe.hgetall(keys.holds)
    *chunks, holds = pipe.execute()
    taken: dict[int, bytes] = {}
    for (first, last), chunk in zip(runs, chunks, strict=True):
        if cls == "A":  # a missing key or a short bitmap reads as free
            for day in range(first, last + 1):
                at = day // 8 - first // 8
                taken[day] = bytes((chunk[at] >> (7 - day % 8) & 1 if at < len(chunk) else 0,))
            continue
        chunk = chunk.ljust((last - first + 1) * width, b"\0")
        for day in range(first, last + 1):
            at = (day - first) * width
            taken[day] = chunk[at : at + width]
    _held_into(
        cls, taken, _held_masks(holds, cls, owner_id, to_ms(now or dt.datetime.now(tz=dt.UTC)))
    )
    return taken


def _mask_of(cls: str, day: bytes, box: int) -> int:
    """One slot's mask from a day's bytes: the hour mask of box `box` (C), of the safe (B),
    or 0/1 (A)."""
    if cls == "C":
        return int.from_bytes(day[(box - 1) * 3 : box * 3])
    return int.from_bytes(day)


@functools.cache
def _touch_table(part: int) -> bytes:
    """bytes.translate table: a byte -> 1 if it has a bit of `part`, else 0."""
    return bytes(1 if value & part else 0 for value in range(256))


_FULL_TABLE = bytes(1 if value == 0xFF else 0 for value in range(256))


def _boxes_touching(day: bytes, mask: int) -> bytes:
    """Class C: one byte per box (box 1 first), non-zero when the box is taken in an hour of
    `mask`. Computed column by column (the first, second and third byte of every box's mask)
    with bytes.translate, so a day's 100 boxes take a few C calls, not 100 Python steps."""
    touching = 0
    for column in range(3):
        part = mask >> (16 - 8 * column) & 0xFF
        if part:
            touching |= int.from_bytes(day[column::3].translate(_touch_table(part)))
    return touching.to_bytes(BOXES_PER_ROOM)


def _boxes_full(day: bytes) -> bytes:
    """Class C: one byte per box, non-zero when the box is taken every hour of the day."""
    full = -1
    for column in range(3):
        full &= int.from_bytes(day[column::3].translate(_FULL_TABLE))
    return full.to_bytes(BOXES_PER_ROOM)


def _read(
    client: redis.Redis,
    cls: str,
    room: int,
    days: Sequence[int],
    boxes: Sequence[int],
    owner_id: str | None,
    now: dt.datetime | None,
) -> dict[tuple[int, int], int]:
    """(day, box) -> taken mask (booked or held by others), in one round trip."""
    taken = _read_days(client, cls, room, days, owner_id, now)
    return {
        (day, box): _mask_of(cls, taken[day], box)
        for day in days
        for box in (boxes if cls == "C" else [0])
    }


def _day_available(
    cls: str,
    day: bytes,
    hours: tuple[int, int] | None,
    boxes: Sequence[int] | None,
) -> bool:
    if cls != "C":
        value = _mask_of(cls, day, 0)
        if cls == "A":
            return value == 0
        return value & hour_mask(*hours) == 0 if hours else value != FULL
    if boxes:
        if hours:
            touching = _boxes_touching(day, hour_mask(*hours))
            return not any(touching[box - 1] for box in boxes)
        busy = 0
        for box in boxes:
            busy |= _mask_of(cls, day, box)
        return busy != FULL
    if hours:
        return 0 in _boxes_touching(day, hour_mask(*hours))
    return 0 in _boxes_full(day)


def _availability_args(
    cls: str, room: int, hours: tuple[int, int] | None, boxes: Sequence[int] | None
) -> tuple[tuple[int, int] | None, Sequence[int] | None]:
    """Check a calendar's class, room, hours and boxes; drop what the class does not use."""
    _check(cls, room)
    if hours is not None and not (0 <= hours[0] < hours[1] <= HOURS_PER_DAY):
        raise ValueError(f"bad hour range {hours!r}")
    if boxes and not all(1 <= b <= BOXES_PER_ROOM for b in boxes):
        raise ValueError(f"bad boxes {boxes!r}")
    if cls == "A":
        hours = None
    return hours, (boxes or None) if cls == "C" else None


def _calendar_dates(start: dt.date | None, end: dt.date | None) -> list[dt.date]:
    first, last = start or season_start(), end or season_end()
    return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]


def _days_from(
    cls: str,
    taken: dict[int, bytes],
    dates: Sequence[dt.date],
    today: dt.date,
    hours: tuple[int, int] | None,
    boxes: Sequence[int] | None,
) -> list[DayAvailability]:
    result = []
    for date in dates:
        reason = day_refusal(date, today)
        if reason:
            result.append(DayAvailability(date, "not_bookable", reason))
        elif _day_available(cls, taken[season_day(date)], hours, boxes):
            result.append(DayAvailability(date, "available"))
        else:
            result.append(DayAvailability(date, "sold_out"))
    return result


def season_availability(
    *,
    client: redis.Redis,
    cls: str,
    room: int,
    hours: tuple[int, int] | None = None,
    boxes: Sequence[int] | None = None,
    owner_id: str | None = None,
    now: dt.datetime | None = None,
    start: dt.date | None = None,
    end: dt.date | None = None,
) -> list[DayAvailability]:
    """Every season day (or every day from `start` to `end`) as available, sold out or not
    bookable (past, today, outside season) for this class, room (+ hours, + boxes)."""
    hours, boxes = _availability_args(cls, room, hours, boxes)
    dates = _calendar_dates(start, end)
    today = site_today(now)
    bookable = [season_day(d) for d in dates if not day_refusal(d, today)]
    taken = _read_days(client, cls, room, bookable, owner_id, now)
    return _days_from(cls, taken, dates, today, hours, boxes)


def free_hours(
    *,
    client: redis.Redis,
    room: int,
    date: dt.date,
    cls: str,
    owner_id: str | None = None,
    now: dt.datetime | None = None,
) -> list[int]:
    """The hours of `date` still free for class B, or (class C) with at least one free box."""
    _check(cls, room)
    if cls == "A":
        raise ValueError("class A is booked by the day")
    if not in_season(date):
        return []
    boxes = list(range(1, BOXES_PER_ROOM + 1)) if cls == "C" else [0]
    taken = _read(client, cls, room, [season_day(date)], boxes, owner_id, now)
    free = 0
    for value in taken.values():
        free |= ~value & FULL
    return [hour for hour in range(HOURS_PER_DAY) if free & (1 << (23 - hour))]


def free_boxes(
    *,
    client: redis.Redis,
    room: int,
    date: dt.date,
    hours: tuple[int, int],
    owner_id: str | None = None,
    now: dt.datetime | None = None,
) -> list[int]:
    """The class C boxes of `date` free for every hour of [start, end)."""
    _check("C", room)
    if not 0 <= hours[0] < hours[1] <= HOURS_PER_DAY:
        raise ValueError(f"bad hour range {hours!r}")
    if not in_season(date):
        return []
    mask = hour_mask(*hours)
    day = season_day(date)
    taken = _read(client, "C", room, [day], range(1, BOXES_PER_ROOM + 1), owner_id, now)
    return [box for (_, box), value in sorted(taken.items()) if value & mask == 0]


DAY_WIDTH = 7  # digits of one day in a per-day stats field (booking.lua's DAY_WIDTH)
STATS_VERSION = "1"  # the `v` of an exact stats hash (booking.lua's STATS_VERSION)
STATUSES = ("confirmed", "collected", "cancelled")


def _days_sum(texts: Iterable[str | None], n_days: int) -> list[int]:
    """The sum of per-day stats fields (7 decimal digits a day, day 0 first) over rooms, per
    day: each field is read as one big integer, so 300 rooms are 300 additions (a day's sum
    stays below 10^7, so no carry crosses into the day before)."""
    width = n_days * DAY_WIDTH
    total = 0
    for field in texts:
        if field:
            total += int(field[:width].ljust(width, "0"))
    digits = str(total).zfill(width)
    return [int(digits[i : i + DAY_WIDTH]) for i in range(0, width, DAY_WIDTH)]


@functools.lru_cache(maxsize=8)
def _stats_keys(prefix: str, rooms: int) -> tuple[tuple[str, str], ...]:
    """(stats, ledger) key of every room (cached: the overview builds 600 names a request)."""
    return tuple((RoomKeys(room).stats, RoomKeys(room).ledger) for room in range(1, rooms + 1))


def _stats_rows(client: redis.Redis, fields: Sequence[str]) -> list[list[str | None]]:
    """`fields` of every room's stats hash (one pipeline of HMGET, with the ledger's size).

    A room whose hash is not exact yet (bookings written before the stats existed) is rebuilt
    from its records and bitmaps first (booking.services.stats_rebuild, once), then read again."""
    keys = _stats_keys(settings.STRONGROOM_KEY_PREFIX, room_count())
    pipe = client.pipeline(transaction=False)
    for stats, ledger in keys:
        pipe.execute_command("HMGET", stats, "v", *fields)
        pipe.execute_command("SCARD", ledger)
    replies = pipe.execute()
    rows: list[list[str | None]] = replies[0::2]
    stale = [
        n
        for n, (row, size) in enumerate(zip(rows, replies[1::2], strict=True))
        if row[0] != STATS_VERSION and int(size)
    ]
    if stale:
        from booking.services import stats_rebuild

        stats_rebuild(client=client, rooms=[n + 1 for n in stale])
        pipe = client.pipeline(transaction=False)
        for n in stale:
            pipe.execute_command("HMGET", keys[n][0], "v", *fields)
        for n, row in zip(stale, pipe.execute(), strict=True):
            rows[n] = row
    return [row[1:] for row in rows]


def _occupancy(cls: str, slots: list[int]) -> Occupancy:
    days = season_days()
    capacity = SLOTS_PER_DAY[cls] * room_count()
    rows = tuple(DayOccupancy(d, n, capacity) for d, n in zip(days, slots, strict=True))
    return Occupancy(cls, rows, sum(slots), capacity * len(days))


def occupancy_per_day(*, client: redis.Redis, cls: str) -> Occupancy:
    """Booked slots per season day over all rooms, and season totals, from the rooms' stats
    counters (one pipeline; the functions keep them equal to the bitmaps' bits, see
    `occupancy_from_bitmaps`)."""
    if cls not in CLASSES:
        raise ValueError(f"no class {cls!r}")
    rows = _stats_rows(client, [f"slots:{season_key()}:{cls}"])
    return _occupancy(cls, _days_sum((row[0] for row in rows), len(season_days())))


def occupancy_from_bitmaps(*, client: redis.Redis, cls: str) -> Occupancy:
    """`occupancy_per_day` counted from the inventory bitmaps themselves (one pipeline of
    BITCOUNT per room per day: 9,300 for 300 rooms and 31 days): the exact check of the
    counters, for tests and audits, not for pages."""
    if cls not in CLASSES:
        raise ValueError(f"no class {cls!r}")
    width = SLOTS_PER_DAY[cls]
    days = season_days()
    rooms = range(1, room_count() + 1)
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        key = RoomKeys(room).inventory(cls)
        for index in range(len(days)):
            pipe.execute_command("BITCOUNT", key, index * width, (index + 1) * width - 1, "BIT")
    counts = pipe.execute()
    per_day = [0] * len(days)
    for i, count in enumerate(counts):
        per_day[i % len(days)] += int(count)
    return _occupancy(cls, per_day)


@dataclass(frozen=True)
class ClassStats:
    """One class's season figures from the stats counters. `active_per_day`: confirmed +
    collected bookings per season day; `for_today`/`made_today`: active bookings with a day
    today / created today (local date); `statuses`: bookings per status."""

    cls: str
    occupancy: Occupancy
    active_per_day: tuple[int, ...]
    for_today: int
    made_today: int
    statuses: dict[str, int]

    @property
    def active(self) -> int:
        return self.statuses["confirmed"] + self.statuses["collected"]


@dataclass(frozen=True)
class SeasonStats:
    today: dt.date
    classes: tuple[ClassStats, ...]


def season_stats(*, client: redis.Redis, now: dt.datetime | None = None) -> SeasonStats:
    """Every class's counters of the season over all rooms: ONE round trip (an HMGET of each
    room's stats hash in one pipeline), whatever the number of bookings."""
    today = site_today(now)
    season = season_key()
    fields: list[str] = []
    for cls in CLASSES:
        fields += [f"slots:{season}:{cls}", f"active:{season}:{cls}"]
        fields += [f"made:{season}:{cls}:{today}"]
        fields += [f"status:{season}:{cls}:{status}" for status in STATUSES]
    width = len(fields) // len(CLASSES)
    n_days = len(season_days())
    rows = _stats_rows(client, fields)
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(fields)
    classes = []
    for c, cls in enumerate(CLASSES):
        first = c * width
        slots = _days_sum(columns[first], n_days)
        active = _days_sum(columns[first + 1], n_days)
        made = sum(int(value) for value in columns[first + 2] if value)
        statuses = {
            status: sum(int(value) for value in columns[first + 3 + i] if value)
            for i, status in enumerate(STATUSES)
        }
        for_today = active[season_day(today)] if in_season(today) else 0
        classes.append(
            ClassStats(cls, _occupancy(cls, slots), tuple(active), for_today, made, statuses)
        )
    return SeasonStats(today, tuple(classes))


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
    expiry, owner, cls, days, start, end, boxes = _parse_hold_value(text(value))
    if expiry <= to_ms(now or dt.datetime.now(tz=dt.UTC)):
        return None
    dates = tuple(season_start() + dt.timedelta(days=d) for d in days)
    request = SlotRequest(cls, room, dates, None if cls == "A" else (start, end), tuple(boxes))
    expires = from_ms(expiry)
    assert expires is not None
    return Hold(hold_id, owner, request, expires)


def inventory_keys(*, client: redis.Redis) -> list[InventoryKey]:
    """The registry: every inventory key that exists, by room and class (one pipeline)."""
    rooms = range(1, room_count() + 1)
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.smembers(RoomKeys(room).registry)
    found = []
    for members in pipe.execute():
        for key in sorted(members):
            parts = ks.BOOKING_INVENTORY.parse(key)
            found.append(InventoryKey(key, int(parts["room"]), parts["cls"], parts["season"]))
    return found


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


@dataclass(frozen=True)
class DayInventory:
    """The booked slots of one class on one day in every room: room -> one 24-bit hour mask per
    box (class C: 100 of them, box 1 first), one mask for class B, and 0/1 for class A."""

    cls: str
    date: dt.date
    rooms: dict[int, tuple[int, ...]]


def day_inventory(*, client: redis.Redis, cls: str, date: dt.date) -> DayInventory:
    """What is booked of one class on one season day, room by room (one pipeline of
    BITFIELD_RO per room; an absent bitmap reads as all free)."""
    if cls not in CLASSES:
        raise ValueError(f"no class {cls!r}")
    if not in_season(date):
        raise ValueError(f"{date} is outside the season")
    day = season_day(date)
    kind = "u1" if cls == "A" else "u24"
    offsets = _field_offsets(cls, day, range(1, BOXES_PER_ROOM + 1))
    rooms = range(1, room_count() + 1)
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        args: list[object] = []
        for offset in offsets:
            args += ["GET", kind, offset]
        pipe.execute_command("BITFIELD_RO", RoomKeys(room).inventory(cls), *args)
    masks = {
        room: tuple(int(v) for v in values)
        for room, values in zip(rooms, pipe.execute(), strict=True)
    }
    return DayInventory(cls, date, masks)


def _dates_checked(cls: str, room: int, dates: Sequence[dt.date]) -> list[int]:
    _check(cls, room)
    return [season_day(d) for d in sorted(set(dates)) if in_season(d)]


def _hours_from(
    cls: str, taken: dict[int, bytes], days: Sequence[int], boxes: Sequence[int] | None
) -> list[int]:
    busy = 0
    for day in days:
        if cls == "B":
            busy |= _mask_of(cls, taken[day], 0)
        elif boxes:
            for box in boxes:
                busy |= _mask_of(cls, taken[day], box)
        else:  # an hour is taken when every box is taken in it
            for hour in range(HOURS_PER_DAY):
                bit = 1 << (23 - hour)
                if not busy & bit and 0 not in _boxes_touching(taken[day], bit):
                    busy |= bit
    return [hour for hour in range(HOURS_PER_DAY) if busy & (1 << (23 - hour))]


def _boxes_from(
    taken: dict[int, bytes], days: Sequence[int], hours: tuple[int, int] | None
) -> list[int]:
    mask = hour_mask(*hours) if hours else FULL
    flags = 0
    for day in days:
        found = _boxes_touching(taken[day], mask) if hours else _boxes_full(taken[day])
        flags |= int.from_bytes(found)
    return [box for box, flag in enumerate(flags.to_bytes(BOXES_PER_ROOM), 1) if flag]


def taken_hours(
    *,
    client: redis.Redis,
    cls: str,
    room: int,
    dates: Sequence[dt.date],
    boxes: Sequence[int] | None = None,
    owner_id: str | None = None,
    now: dt.datetime | None = None,
) -> list[int]:
    """Hours that cannot be booked on every one of `dates` (booked or held by others), in one
    round trip. B: the safe is taken. C with boxes: one of the boxes is taken; C without boxes:
    every box is taken. Days outside the season are ignored."""
    if cls == "A":
        raise ValueError("class A is booked by the day")
    days = _dates_checked(cls, room, dates)
    if boxes and not all(1 <= b <= BOXES_PER_ROOM for b in boxes):
        raise ValueError(f"bad boxes {boxes!r}")
    if not days:
        return []
    taken = _read_days(client, cls, room, days, owner_id, now)
    return _hours_from(cls, taken, days, boxes if cls == "C" else None)


def taken_boxes(
    *,
    client: redis.Redis,
    room: int,
    dates: Sequence[dt.date],
    hours: tuple[int, int] | None = None,
    owner_id: str | None = None,
    now: dt.datetime | None = None,
) -> list[int]:
    """Class C boxes that cannot be booked on every one of `dates`: taken during `hours`, or
    (no hours chosen yet) taken all day; one round trip."""
    if hours is not None and not (0 <= hours[0] < hours[1] <= HOURS_PER_DAY):
        raise ValueError(f"bad hour range {hours!r}")
    days = _dates_checked("C", room, dates)
    if not days:
        return []
    return _boxes_from(_read_days(client, "C", room, days, owner_id, now), days, hours)


@dataclass(frozen=True)
class PanelAvailability:
    """What the booking page shows at once: each day from `start` to `end` (the calendar), and
    for the chosen dates the taken hours (B/C, else []) and the taken boxes (C, else [])."""

    days: list[DayAvailability]
    taken_hours: list[int]
    taken_boxes: list[int]


def panel_availability(
    *,
    client: redis.Redis,
    cls: str,
    room: int,
    start: dt.date,
    end: dt.date,
    dates: Sequence[dt.date] = (),
    hours: tuple[int, int] | None = None,
    boxes: Sequence[int] | None = None,
    owner_id: str | None = None,
    now: dt.datetime | None = None,
) -> PanelAvailability:
    """`season_availability`, `taken_hours` and `taken_boxes` of one page from ONE read of the
    room's bitmap (the three would read it three times)."""
    hours, boxes = _availability_args(cls, room, hours, boxes)
    calendar = _calendar_dates(start, end)
    today = site_today(now)
    chosen = _dates_checked(cls, room, dates)
    bookable = {season_day(d) for d in calendar if not day_refusal(d, today)}
    taken = _read_days(client, cls, room, sorted(bookable | set(chosen)), owner_id, now)
    return PanelAvailability(
        days=_days_from(cls, taken, calendar, today, hours, boxes),
        taken_hours=_hours_from(cls, taken, chosen, boxes) if cls != "A" and chosen else [],
        taken_boxes=_boxes_from(taken, chosen, hours) if cls == "C" and chosen else [],
    )


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
