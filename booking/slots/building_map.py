"""The building map: every room's availability for one class, day(s) and hour range, from ONE
store round trip (one pipeline: a GETRANGE of raw bitmap bytes per room and run of days, and the
room's holds). Booked and held slots are kept apart, so a room blocked only by another buyer's
hold reads "held until 14:05", not "sold out"."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace

import redis

from booking.domain.rules import (
    BOXES_PER_ROOM,
    HOURS_PER_DAY,
    calendar_day,
    hour_mask,
)
from booking.slots.layout import DAY_BYTES, MASK_BYTES, box_flags, box_mask, boxes_touched
from booking.slots.room_read import HeldSlots, RoomDays, rooms_read
from strongroom.clock import from_ms

MAP_MAX_DAYS = 7  # several days at once: at most a week (a week of class C is 2,100 bytes a room)
STATES = ("free", "partly", "held", "sold_out", "closed")


@dataclass(frozen=True)
class RoomState:
    """One room on the map. `free` counts what can be booked as asked: days (A), hours of the
    range (B) or boxes free for every hour of the range (C); `held` counts what another buyer's
    hold blocks (nothing booked); `held_until` is when the first such hold ends."""

    room: int
    state: str  # free | partly | held | sold_out | closed
    free: int
    total: int
    held: int
    held_until: dt.datetime | None
    first_box: int | None  # class C: the lowest box free for the whole choice
    free_hours: tuple[int, ...]  # class B: the free hours of the range
    # class A: the free days (what a link preselects); class B: the days the link asks for when
    # no hour is free on every day (else (): all of them), `free` then counting the days with
    # free hours
    free_days: tuple[int, ...] = ()
    closed: str = ""  # closed (or, partly free, closed in part): the reason staff gave


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


def _earliest(holds: Sequence[HeldSlots]) -> dt.datetime | None:
    return from_ms(min(h.expires_ms for h in holds)) if holds else None


def _state(free: int, total: int, held: int) -> str:
    if free == total:
        return "free"
    if free:
        return "partly"
    return "held" if held else "sold_out"


def _room_a(days: RoomDays) -> RoomState:
    held = 0
    free: list[int] = []
    blocking: list[HeldSlots] = []
    for day, value in sorted(days.booked.items()):
        holds = days.holds.get(day, ())
        if value[0]:
            continue
        if holds:
            held += 1
            blocking += holds
        else:
            free.append(day)
    total = len(days.booked)
    until = _earliest(blocking)
    state = _state(len(free), total, held)
    return RoomState(days.room, state, len(free), total, held, until, None, (), tuple(free))


def _room_b(days: RoomDays, hours: tuple[int, int]) -> RoomState:
    wanted = hour_mask(*hours)
    booked = held_mask = 0
    blocking: list[HeldSlots] = []
    open_by_day: dict[int, int] = {}  # the hours of the range free on each day
    for day, value in sorted(days.booked.items()):
        day_booked = int.from_bytes(value)
        day_held = 0
        for hold in days.holds.get(day, ()):
            if hold.mask & wanted:
                day_held |= hold.mask
                blocking.append(hold)
        booked |= day_booked
        held_mask |= day_held
        open_by_day[day] = wanted & ~day_booked & ~day_held
    booked &= wanted
    held_mask &= wanted & ~booked
    free_mask = wanted & ~booked & ~held_mask
    total = hours[1] - hours[0]
    held = bin(held_mask).count("1")
    until = _earliest(blocking) if held else None
    free_days: tuple[int, ...] = ()
    open_days = [day for day, mask in open_by_day.items() if mask]
    if not free_mask and open_days:
        # No hour is free on every day, but some days have free hours: partly free, and the
        # link offers those days (the hours free on all of them, else the first day's).
        free_days = tuple(open_days)
        common = wanted
        for day in open_days:
            common &= open_by_day[day]
        if not common:
            free_days, common = free_days[:1], open_by_day[open_days[0]]
        hours_open = tuple(h for h in range(*hours) if common & (1 << (23 - h)))
        return RoomState(
            days.room, "partly", len(open_days), total, held, until, None, hours_open, free_days
        )
    free = [h for h in range(*hours) if free_mask & (1 << (23 - h))]
    state = _state(len(free), total, held)
    return RoomState(days.room, state, len(free), total, held, until, None, tuple(free))


def _room_c(days: RoomDays, hours: tuple[int, int], wanted: int | None = None) -> RoomState:
    wanted = hour_mask(*hours) if wanted is None else wanted
    booked = 0
    held_boxes: set[int] = set()
    blocking: list[HeldSlots] = []
    for day, value in days.booked.items():
        booked |= boxes_touched(value, wanted)
        for hold in days.holds.get(day, ()):
            if hold.mask & wanted:
                held_boxes.update(hold.boxes)
                blocking.append(hold)
    flags = box_flags(booked)
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


def _closed_hours(days: RoomDays, day: int) -> int:
    """The hours staff closed the room on `day` (a 24-bit mask, hour 0 the top bit)."""
    mask = 0
    for hours, _why in days.closures.get(day, ()):
        mask |= hours
    return mask


def _with_closed_taken(days: RoomDays, cls: str, closed: dict[int, int]) -> RoomDays:
    """Class B or C `days` with the hours closed on each day counted as booked (every box)."""
    booked = dict(days.booked)
    for day, mask in closed.items():
        value = booked.get(day, bytes(DAY_BYTES[cls]))
        shut = mask.to_bytes(MASK_BYTES) * (BOXES_PER_ROOM if cls == "C" else 1)
        booked[day] = bytes(a | b for a, b in zip(value, shut, strict=True))
    return replace(days, booked=booked)


def _closed_by_day(days: RoomDays) -> dict[int, int]:
    return {day: mask for day in days.booked if (mask := _closed_hours(days, day))}


def room_state(days: RoomDays, cls: str, hours: tuple[int, int]) -> RoomState:
    """One room's state for the choice it was read for: closed, with the staff's reason, when
    a closure covers the whole choice on one of its days; hours closed for part of it are not
    free, and the rest are counted as usual (a morning's maintenance leaves the afternoon)."""
    wanted = hour_mask(*hours) if cls != "A" else 0
    closed: dict[int, int] = {}
    why_closed = ""  # the reason of the first closure that closes part of the choice
    for day in sorted(days.booked):
        reason = days.closed(day, cls)
        shut = _closed_hours(days, day) & wanted
        if shut and not reason:
            why = next(why for mask, why in days.closures[day] if mask & wanted)
            reason = why if shut == wanted else ""
            why_closed = why_closed or why
        if reason:
            total = {"A": len(days.booked), "B": hours[1] - hours[0], "C": BOXES_PER_ROOM}[cls]
            return RoomState(days.room, "closed", 0, total, 0, None, None, (), (), reason)
        if shut:
            closed[day] = shut
    if cls == "A":
        return _room_a(days)
    if not closed:
        return _room_b(days, hours) if cls == "B" else _room_c(days, hours)
    if cls == "B":
        return replace(_room_b(_with_closed_taken(days, cls, closed), hours), closed=why_closed)
    # Class C: a box is counted free when it is free in every open hour, and the room is at
    # most partly free (its closed hours are not).
    open_hours = wanted
    for shut in closed.values():
        open_hours &= ~shut
    if not open_hours:  # closed at every hour of the choice, on one day or another
        return RoomState(days.room, "closed", 0, BOXES_PER_ROOM, 0, None, None, (), (), why_closed)
    # No one-press "Book box N" for the whole range: part of it is closed (the grid shows which).
    state = replace(_room_c(days, hours, wanted=open_hours), first_box=None, closed=why_closed)
    return replace(state, state="partly") if state.state == "free" else state


def box_grid(
    days: RoomDays, dates: Sequence[dt.date], hours: tuple[int, int]
) -> tuple[BoxRow, ...]:
    """A class C room's boxes x hours over `dates` (what one booking of them would take): a
    cell is sold when it is sold on any of the days, held (until the last such hold ends) when
    another buyer holds it on any, and free only when it is free on every one of them."""
    empty = bytes(DAY_BYTES["C"])
    values = [days.booked.get(calendar_day(date), empty) for date in dates]
    holds = [hold for date in dates for hold in days.holds.get(calendar_day(date), ())]
    rows = []
    for box in range(1, BOXES_PER_ROOM + 1):
        mask = 0
        for value in values:
            mask |= box_mask(value, box)
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
        opened = _with_closed_taken(opened, cls, _closed_by_day(opened))  # closed: not free
        grid = box_grid(opened, sorted(dates), span)
    holders = frozenset().union(*(days.holders for days in read))
    return BuildingMap(
        cls, tuple(sorted(dates)), span, states, grid, grid_room if grid else None, holders
    )
