"""Honest pickers: what exactly stands in the way of a choice, and what is nearest instead.

From the booking map's read (booked bytes and other buyers' holds kept apart, one round trip):
each chosen slot that is sold or held (with the hold's end), the same hours in the closest rooms
where the whole choice is free, and the closest free hours (or other boxes) in the same room. The
calendar's words come from the same read (booking.slots.panel_state)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import redis

from booking.domain.records import Slot
from booking.domain.rules import HOURS_PER_DAY, calendar_day, hour_mask, room_count
from booking.slots.layout import box_flags, box_mask, boxes_touched
from booking.slots.room_read import RoomDays, rooms_read, slots_taken
from strongroom.clock import from_ms

ALTERNATIVES = 3  # at most this many suggestions of each kind
REACH = 30  # rooms on either side searched for the same hours elsewhere


@dataclass(frozen=True)
class Wanted:
    """A choice as the checks need it (a complete SlotRequest, or the page's choices)."""

    cls: str
    room: int
    dates: tuple[dt.date, ...]
    hours: tuple[int, int] | None  # B/C
    boxes: tuple[int, ...]  # C


@dataclass(frozen=True)
class Blocked:
    """A run of chosen slots that cannot be had: sold, held by another buyer until when, or
    closed by staff (the reason they gave)."""

    date: dt.date
    hours: tuple[int, int] | None  # None for class A
    box: int | None
    held_until: dt.datetime | None  # None: sold (or closed)
    closed: str | None = None  # staff closed these hours of the room (every box): why


@dataclass(frozen=True)
class Alternative:
    """A choice that is free right now, near the one asked for."""

    room: int
    hours: tuple[int, int] | None
    boxes: tuple[int, ...]
    dates: tuple[dt.date, ...]


@dataclass(frozen=True)
class ChoiceCheck:
    blocked: tuple[Blocked, ...]
    other_rooms: tuple[Alternative, ...]  # the same hours (and as many boxes) in close rooms
    other_hours: tuple[Alternative, ...]  # this room: the closest free hours, or other boxes

    @property
    def free(self) -> bool:
        return not self.blocked


def _runs_of(mask: int, hours: tuple[int, int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for hour in range(*hours):
        if mask & (1 << (23 - hour)):
            if runs and runs[-1][1] == hour:
                runs[-1] = (runs[-1][0], hour + 1)
            else:
                runs.append((hour, hour + 1))
    return runs


def blocked_slots(days: RoomDays, wanted: Wanted) -> list[Blocked]:
    """The chosen slots that are closed by staff, sold or held by another buyer, consecutive
    hours merged."""
    found: list[Blocked] = []
    for date in wanted.dates:
        day = calendar_day(date)
        value = days.booked.get(day)
        if value is None:
            continue
        holds = days.holds.get(day, ())
        span = wanted.hours or (0, HOURS_PER_DAY)
        closed = 0
        for mask, reason in days.closures.get(day, ()):
            if wanted.cls == "A":
                closed = hour_mask(0, HOURS_PER_DAY)
                found.append(Blocked(date, None, None, None, closed=reason))
                break
            runs = _runs_of(mask & hour_mask(*span) & ~closed, span)
            found.extend(Blocked(date, run, None, None, closed=reason) for run in runs)
            closed |= mask
        if wanted.cls == "A":
            if closed:
                continue
            if value[0]:
                found.append(Blocked(date, None, None, None))
            elif holds:
                found.append(Blocked(date, None, None, from_ms(max(h.expires_ms for h in holds))))
            continue
        for box in wanted.boxes if wanted.cls == "C" else (None,):
            booked = box_mask(value, box) & hour_mask(*span) & ~closed
            for run in _runs_of(booked, span):
                found.append(Blocked(date, run, box, None))
            for hold in holds:
                if box is not None and box not in hold.boxes:
                    continue
                held = hold.mask & hour_mask(*span) & ~booked & ~closed
                for run in _runs_of(held, span):
                    found.append(Blocked(date, run, box, from_ms(hold.expires_ms)))
    return found


def blocked_each(blocked: Sequence[Blocked]) -> tuple[Slot, ...] | None:
    """Every slot of `blocked` (one per hour, per box), as a claim reports taken ones: a held
    run's are held; None when a run is closed by staff (a closure is nobody's booking)."""
    found: list[Slot] = []
    for run in blocked:
        if run.closed is not None:
            return None
        held = run.held_until is not None
        hours: Sequence[int | None] = range(*run.hours) if run.hours else (None,)
        found.extend(Slot(run.date, hour, run.box, held) for hour in hours)
    return tuple(found)


def _free_boxes(days: RoomDays, dates: Sequence[dt.date], mask: int) -> list[int]:
    """Class C boxes free for every hour of `mask` on every date (holds count as taken)."""
    touched = 0
    for date in dates:
        touched |= boxes_touched(slots_taken(days, "C", calendar_day(date)), mask)
    flags = box_flags(touched)
    return [box for box, flag in enumerate(flags, 1) if not flag]


def _fits(days: RoomDays, wanted: Wanted, hours: tuple[int, int] | None) -> tuple[int, ...] | None:
    """The boxes (C; () for A/B) with which `wanted` at `hours` is free in this room, or None.
    Class C keeps the chosen boxes when they are free, else takes the nearest free ones."""
    if wanted.cls == "A":
        open_days = all(not slots_taken(days, "A", calendar_day(d))[0] for d in wanted.dates)
        return () if open_days else None
    assert hours is not None
    mask = hour_mask(*hours)
    if wanted.cls == "B":
        busy = 0
        for date in wanted.dates:
            busy |= int.from_bytes(slots_taken(days, "B", calendar_day(date)))
        return () if busy & mask == 0 else None
    free = _free_boxes(days, wanted.dates, mask)
    count = max(1, len(wanted.boxes))
    if len(free) < count:
        return None
    if set(wanted.boxes) <= set(free) and wanted.boxes:
        return wanted.boxes
    centre = wanted.boxes[0] if wanted.boxes else 1
    return tuple(sorted(sorted(free, key=lambda b: (abs(b - centre), b))[:count]))


def _other_rooms(read: Sequence[RoomDays], wanted: Wanted) -> list[Alternative]:
    found = []
    for days in sorted(read, key=lambda d: (abs(d.room - wanted.room), d.room)):
        if days.room == wanted.room:
            continue
        boxes = _fits(days, wanted, wanted.hours)
        if boxes is not None:
            found.append(Alternative(days.room, wanted.hours, boxes, wanted.dates))
            if len(found) == ALTERNATIVES:
                break
    return found


def _other_hours(days: RoomDays, wanted: Wanted) -> list[Alternative]:
    """This room: the same length of hours starting as close as possible to the chosen start;
    for class C, failing that, other boxes at the chosen hours."""
    if wanted.cls == "A" or wanted.hours is None:
        return []
    start, end = wanted.hours
    length = end - start
    starts = sorted(range(HOURS_PER_DAY - length + 1), key=lambda h: (abs(h - start), h))
    fitting = []
    for first in starts:
        if first == start:
            continue
        hours = (first, first + length)
        boxes = _fits(days, wanted, hours)
        if boxes is not None and (wanted.cls == "B" or boxes == wanted.boxes):
            fitting.append(Alternative(wanted.room, hours, boxes, wanted.dates))
    # the closest earlier and the closest later hours first, then the next closest
    earlier = [a for a in fitting if a.hours and a.hours[0] < start][:1]
    later = [a for a in fitting if a.hours and a.hours[0] > start][:1]
    found = earlier + later
    found += [a for a in fitting if a not in found][: ALTERNATIVES - len(found)]
    if wanted.cls == "C":
        boxes = _fits(days, wanted, wanted.hours)
        if boxes is not None and boxes != wanted.boxes:
            found.insert(0, Alternative(wanted.room, wanted.hours, boxes, wanted.dates))
    return found[:ALTERNATIVES]


def _reach(wanted: Wanted) -> range:
    """The chosen room and up to REACH rooms on either side."""
    return range(max(1, wanted.room - REACH), min(room_count(), wanted.room + REACH) + 1)


def choice_check(
    *,
    client: redis.Redis,
    wanted: Wanted,
    owner_id: str | None = None,
    now: dt.datetime | None = None,
) -> ChoiceCheck:
    """What stands in the way of `wanted` and what is nearest instead: ONE round trip (the
    chosen room and up to REACH rooms on either side, as the building map reads them)."""
    read = rooms_read(
        client=client,
        cls=wanted.cls,
        rooms=_reach(wanted),
        dates=wanted.dates,
        owner_id=owner_id,
        now=now,
    )
    here = next(days for days in read if days.room == wanted.room)
    blocked = blocked_slots(here, wanted)
    if not blocked:
        return ChoiceCheck((), (), ())
    return ChoiceCheck(
        tuple(blocked), tuple(_other_rooms(read, wanted)), tuple(_other_hours(here, wanted))
    )
