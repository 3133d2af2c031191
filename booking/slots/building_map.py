"""The building map: every room's availability for one class, day(s) and hour range, from ONE
store round trip (one pipeline: a GETRANGE of raw bitmap bytes per room and run of days, and the
room's holds). Booked and held slots are kept apart, so a room blocked only by another buyer's
hold reads "held until 14:05", not "sold out"."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import redis
from django.conf import settings
from redis.client import NEVER_DECODE

from booking.domain.formats import hold_value_split
from booking.domain.keys import RoomKeys
from booking.domain.rules import (
    BOXES_PER_ROOM,
    HOURS_PER_DAY,
    hour_mask,
    room_count,
    season_day,
    season_key,
)
from strongroom.ahead import Command, pipeline_replies
from strongroom.clock import from_ms, to_ms
from strongroom.store import text_hash

FULL_DAY = (1 << HOURS_PER_DAY) - 1
MAP_MAX_DAYS = 7  # several days at once: at most a week (a week of class C is 2,100 bytes a room)
STATES = ("free", "partly", "held", "sold_out")

# Bytes of one day of one class in a room's bitmap (hour 0 in the top bit of each 24-bit mask):
# class C 300 (box 1 first), class B 3; class A is one bit a day (read by the byte).
_DAY_BYTES = {"B": 3, "C": BOXES_PER_ROOM * 3}


@dataclass(frozen=True)
class HeldSlots:
    """Another buyer's unexpired hold as the map needs it: its hours and boxes on one day."""

    mask: int  # 24-bit hour mask (1 for class A)
    boxes: tuple[int, ...]  # class C; () for A and B
    expires_ms: int


@dataclass(frozen=True)
class RoomDays:
    """One room's read: its booked bytes per chosen season day and the holds on those days."""

    room: int
    booked: dict[int, bytes]  # season day -> bytes (A: one byte, 0 or 1)
    holds: dict[int, tuple[HeldSlots, ...]]  # season day -> other buyers' holds
    # Everyone with an unexpired hold of the class on those days, the reader included.
    holders: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RoomState:
    """One room on the map. `free` counts what can be booked as asked: days (A), hours of the
    range (B) or boxes free for every hour of the range (C); `held` counts what another buyer's
    hold blocks (nothing booked); `held_until` is when the first such hold ends."""

    room: int
    state: str  # free | partly | held | sold_out
    free: int
    total: int
    held: int
    held_until: dt.datetime | None
    first_box: int | None  # class C: the lowest box free for the whole choice
    free_hours: tuple[int, ...]  # class B: the free hours of the range


@dataclass(frozen=True)
class GridCell:
    """One box x hour of a class C room's grid."""

    hour: int
    state: str  # free | held | sold_out
    held_until: dt.datetime | None


@dataclass(frozen=True)
class BoxRow:
    box: int
    cells: tuple[GridCell, ...]
    free_all: bool  # free for every hour of the range


@dataclass(frozen=True)
class BuildingMap:
    cls: str
    dates: tuple[dt.date, ...]
    hours: tuple[int, int]  # (0, 24) when no range was chosen (and for class A)
    rooms: tuple[RoomState, ...]
    grid: tuple[BoxRow, ...]  # the open class C room's boxes x hours, else ()
    grid_room: int | None
    # Everyone holding slots the map shows: anybody else sees exactly this map too.
    holders: frozenset[str] = frozenset()

    def count(self, state: str) -> int:
        return sum(1 for room in self.rooms if room.state == state)


def _runs(days: Sequence[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for day in sorted(set(days)):
        if runs and runs[-1][1] == day - 1:
            runs[-1] = (runs[-1][0], day)
        else:
            runs.append((day, day))
    return runs


def _holds_by_day(
    raw: dict[str, str], cls: str, days: set[int], owner_id: str | None, now_ms: int
) -> tuple[dict[int, tuple[HeldSlots, ...]], frozenset[str]]:
    """Other buyers' unexpired holds of `cls` on `days` (values as
    booking.domain.formats.HOLD_FIELDS names them), and the owners of every such hold. The
    buyer's own holds count as free for them."""
    found: dict[int, list[HeldSlots]] = {}
    holders: set[str] = set()
    for value in raw.values():
        hold = hold_value_split(value)
        expiry = int(float(hold["expiry"]))
        if hold["cls"] != cls or expiry <= now_ms:
            continue
        on_days = [day for day in (int(d) for d in hold["days"].split(",") if d) if day in days]
        if on_days:
            holders.add(hold["owner"])
        if owner_id is not None and hold["owner"] == owner_id:
            continue
        mask = 1 if cls == "A" else hour_mask(int(hold["hstart"] or 0), int(hold["hend"] or 0))
        boxes = tuple(int(b) for b in hold["boxes"].split(",") if b) if cls == "C" else ()
        for day in on_days:
            found.setdefault(day, []).append(HeldSlots(mask, boxes, expiry))
    return {day: tuple(held) for day, held in found.items()}, frozenset(holders)


@functools.lru_cache(maxsize=16)
def _key_names(prefix: str, season: str, cls: str) -> tuple[tuple[str, str], ...]:
    """(inventory of `cls`, holds) of every room, built once (600 names a map otherwise)."""
    return tuple(
        (RoomKeys(room).inventory(cls, season), RoomKeys(room).holds)
        for room in range(1, room_count() + 1)
    )


def rooms_commands(*, cls: str, rooms: Sequence[int], dates: Sequence[dt.date]) -> list[Command]:
    """What `rooms_read` sends: a GETRANGE per room and run of consecutive days, and an HGETALL
    of the room's holds (a view plans them ahead with its identity, strongroom/ahead.py)."""
    runs = _runs(sorted({season_day(d) for d in dates}))
    raw = {NEVER_DECODE: True}  # bytes, whatever the client's decode_responses
    names = _key_names(settings.STRONGROOM_KEY_PREFIX, season_key(), cls)
    commands: list[Command] = []
    for room in rooms:
        inventory, holds_key = names[room - 1]
        for first, last in runs:
            if cls == "A":
                start, end = first // 8, last // 8
            else:
                width = _DAY_BYTES[cls]
                start, end = first * width, (last + 1) * width - 1
            commands.append((("GETRANGE", inventory, start, end), raw))
        commands.append((("HGETALL", holds_key), {}))
    return commands


def rooms_read(
    *,
    client: redis.Redis,
    cls: str,
    rooms: Sequence[int],
    dates: Sequence[dt.date],
    owner_id: str | None = None,
    now: dt.datetime | None = None,
) -> list[RoomDays]:
    """The booked bytes and other buyers' holds of `rooms` on `dates` (season days), in ONE
    round trip: one pipeline of `rooms_commands` (on a cluster, redis-py sends one pipeline per
    primary), none when the view read them ahead with its identity."""
    days = sorted({season_day(d) for d in dates})
    runs = _runs(days)
    replies = pipeline_replies(client, rooms_commands(cls=cls, rooms=rooms, dates=dates))
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    wanted = set(days)
    step = len(runs) + 1
    found = []
    for n, room in enumerate(rooms):
        chunks, holds = replies[n * step : n * step + len(runs)], replies[n * step + len(runs)]
        booked: dict[int, bytes] = {}
        for (first, last), chunk in zip(runs, chunks, strict=True):
            for day in range(first, last + 1):
                if cls == "A":
                    at = day // 8 - first // 8
                    bit = chunk[at] >> (7 - day % 8) & 1 if at < len(chunk) else 0
                    booked[day] = bytes((bit,))
                else:
                    width = _DAY_BYTES[cls]
                    at = (day - first) * width
                    booked[day] = chunk[at : at + width].ljust(width, b"\0")
        held, holders = (
            _holds_by_day(text_hash(holds), cls, wanted, owner_id, now_ms)
            if holds
            else ({}, frozenset())
        )
        found.append(RoomDays(room, booked, held, holders))
    return found


@functools.cache
def _touch_table(part: int) -> bytes:
    """bytes.translate table: a byte -> 1 if it shares a bit with `part`, else 0."""
    return bytes(1 if value & part else 0 for value in range(256))


def boxes_touched(day: bytes, mask: int) -> int:
    """Class C: a 100-byte big integer, byte b-1 non-zero when box b is booked in an hour of
    `mask` (three bytes.translate calls, one per byte of the boxes' 24-bit masks)."""
    touched = 0
    for column in range(3):
        part = mask >> (16 - 8 * column) & 0xFF
        if part:
            touched |= int.from_bytes(day[column::3].translate(_touch_table(part)))
    return touched


def _box_flags(value: int) -> bytes:
    return value.to_bytes(BOXES_PER_ROOM)


def _earliest(holds: Sequence[HeldSlots]) -> dt.datetime | None:
    return from_ms(min(h.expires_ms for h in holds)) if holds else None


def _state(free: int, total: int, held: int) -> str:
    if free == total:
        return "free"
    if free:
        return "partly"
    return "held" if held else "sold_out"


def _room_a(days: RoomDays) -> RoomState:
    free = held = 0
    blocking: list[HeldSlots] = []
    for day, value in days.booked.items():
        holds = days.holds.get(day, ())
        if value[0]:
            continue
        if holds:
            held += 1
            blocking += holds
        else:
            free += 1
    total = len(days.booked)
    until = _earliest(blocking)
    return RoomState(days.room, _state(free, total, held), free, total, held, until, None, ())


def _room_b(days: RoomDays, hours: tuple[int, int]) -> RoomState:
    wanted = hour_mask(*hours)
    booked = held_mask = 0
    blocking: list[HeldSlots] = []
    for day, value in days.booked.items():
        booked |= int.from_bytes(value)
        for hold in days.holds.get(day, ()):
            if hold.mask & wanted:
                held_mask |= hold.mask
                blocking.append(hold)
    booked &= wanted
    held_mask &= wanted & ~booked
    free_mask = wanted & ~booked & ~held_mask
    free = [h for h in range(*hours) if free_mask & (1 << (23 - h))]
    total = hours[1] - hours[0]
    held = bin(held_mask).count("1")
    until = _earliest(blocking) if held else None
    state = _state(len(free), total, held)
    return RoomState(days.room, state, len(free), total, held, until, None, tuple(free))


def _room_c(days: RoomDays, hours: tuple[int, int]) -> RoomState:
    wanted = hour_mask(*hours)
    booked = 0
    held_boxes: set[int] = set()
    blocking: list[HeldSlots] = []
    for day, value in days.booked.items():
        booked |= boxes_touched(value, wanted)
        for hold in days.holds.get(day, ()):
            if hold.mask & wanted:
                held_boxes.update(hold.boxes)
                blocking.append(hold)
    flags = _box_flags(booked)
    held = {b for b in held_boxes if not flags[b - 1]}
    if held:  # rare: mark the held boxes taken too
        taken = bytearray(flags)
        for box in held:
            taken[box - 1] = 1
        flags = bytes(taken)
    free = flags.count(0)  # one byte per box, 0 when the box is free for the whole choice
    until = _earliest([h for h in blocking if held.intersection(h.boxes)]) if held else None
    state = _state(free, BOXES_PER_ROOM, len(held))
    first = flags.index(0) + 1 if free else None
    return RoomState(days.room, state, free, BOXES_PER_ROOM, len(held), until, first, ())


def room_state(days: RoomDays, cls: str, hours: tuple[int, int]) -> RoomState:
    """One room's state for the choice it was read for."""
    if cls == "A":
        return _room_a(days)
    if cls == "B":
        return _room_b(days, hours)
    return _room_c(days, hours)


def box_grid(
    days: RoomDays, dates: Sequence[dt.date], hours: tuple[int, int]
) -> tuple[BoxRow, ...]:
    """A class C room's boxes x hours over `dates` (what one booking of them would take): a
    cell is sold when it is sold on any of the days, held (until the last such hold ends) when
    another buyer holds it on any, and free only when it is free on every one of them."""
    empty = bytes(_DAY_BYTES["C"])
    values = [days.booked.get(season_day(date), empty) for date in dates]
    holds = [hold for date in dates for hold in days.holds.get(season_day(date), ())]
    rows = []
    for box in range(1, BOXES_PER_ROOM + 1):
        mask = 0
        for value in values:
            mask |= int.from_bytes(value[(box - 1) * 3 : box * 3])
        mine = [h for h in holds if box in h.boxes]
        cells = []
        for hour in range(*hours):
            bit = 1 << (23 - hour)
            if mask & bit:
                cells.append(GridCell(hour, "sold_out", None))
                continue
            over = [h for h in mine if h.mask & bit]
            if over:
                cells.append(GridCell(hour, "held", from_ms(max(h.expires_ms for h in over))))
            else:
                cells.append(GridCell(hour, "free", None))
        row = tuple(cells)
        rows.append(BoxRow(box, row, all(c.state == "free" for c in row)))
    return tuple(rows)


def building_map_read(
    *,
    client: redis.Redis,
    cls: str,
    dates: Sequence[dt.date],
    hours: tuple[int, int] | None,
    rooms: Sequence[int],
    grid_room: int | None = None,
    owner_id: str | None = None,
    now: dt.datetime | None = None,
) -> BuildingMap:
    """The map of `rooms` for class `cls` on `dates` (during `hours`; the whole day when None),
    and for class C the open room's box grid over the same dates: ONE round trip."""
    if not dates or len(dates) > MAP_MAX_DAYS:
        raise ValueError(f"1 to {MAP_MAX_DAYS} dates, not {len(dates)}")
    span = (0, HOURS_PER_DAY) if cls == "A" or hours is None else hours
    wanted = list(rooms)
    if cls == "C" and grid_room is not None and grid_room not in wanted:
        wanted.append(grid_room)
    read = rooms_read(client=client, cls=cls, rooms=wanted, dates=dates, owner_id=owner_id, now=now)
    listed = set(rooms)
    states = tuple(room_state(days, cls, span) for days in read if days.room in listed)
    grid: tuple[BoxRow, ...] = ()
    if cls == "C" and grid_room is not None:
        opened = next(days for days in read if days.room == grid_room)
        grid = box_grid(opened, sorted(dates), span)
    holders = frozenset().union(*(days.holders for days in read))
    return BuildingMap(
        cls, tuple(sorted(dates)), span, states, grid, grid_room if grid else None, holders
    )
