"""The booking page's availability from ONE read of the room (booked bytes and other buyers'
holds kept apart, as the building map reads them): each calendar day's word, the hours and
boxes taken on the chosen days, and exactly which chosen slots are sold or held."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import redis

from booking.domain.rules import (
    HOURS_PER_DAY,
    bookable_days,
    calendar_day,
    day_refusals,
    hour_mask,
    site_today,
)
from booking.slots.choice_check import Blocked, Wanted, blocked_slots
from booking.slots.layout import FULL_DAY, box_flags, box_mask, boxes_full, boxes_touched, hours_in
from booking.slots.room_read import RoomDays, rooms_commands, rooms_read, slots_taken
from strongroom.ahead import Command
from strongroom.clock import from_ms


@dataclass(frozen=True)
class HourRun:
    """A run of the chosen hours on one day that share a state: taken (booked), held (by
    another buyer, until when) or free."""

    start: int
    end: int
    state: str  # taken | held | free
    held_until: dt.datetime | None = None


@dataclass(frozen=True)
class CalendarDay:
    date: dt.date
    state: str  # available | partly | held | sold_for | sold_out | closed | not_bookable
    reason: str = ""  # not_bookable: past | today | outside_season; closed: staff's reason
    held_until: dt.datetime | None = None
    parts: tuple[HourRun, ...] = ()  # held | sold_for with chosen hours: each run's state


@dataclass(frozen=True)
class PanelState:
    days: tuple[CalendarDay, ...]
    taken_hours: tuple[int, ...]  # B/C: hours not bookable on every chosen day
    taken_boxes: tuple[int, ...]  # C: boxes not bookable during the chosen hours
    blocked: tuple[Blocked, ...]  # a complete choice: its slots that are sold or held

    @property
    def stamp(self) -> str:
        """A short digest of what the page shows: a refresh that finds the same answers nothing."""
        return hashlib.blake2b(repr(self).encode(), digest_size=8).hexdigest()


@dataclass(frozen=True)
class DayWords:
    """One bookable day for the chosen class, room (and hours, boxes).

    state: available (nothing taken), partly (the choice is free, something else is taken:
    `reason` is staff's when they closed some hours of the day),
    held (the choice is blocked only by another buyer's hold, until `held_until`), sold_for
    (the choice is taken, the day has other free slots), sold_out (nothing left that day),
    closed (staff closed the day, or the chosen hours: `reason` says why)."""

    state: str
    held_until: dt.datetime | None = None
    parts: tuple[HourRun, ...] = ()
    reason: str = ""


def _everything_taken(cls: str, value: bytes) -> bool:
    if cls == "A":
        return bool(value[0])
    if cls == "B":
        return box_mask(value, None) == FULL_DAY
    return value == b"\xff" * len(value)


def _choice_blocked(
    cls: str, value: bytes, hours: tuple[int, int] | None, boxes: Sequence[int]
) -> bool:
    if cls == "A":
        return bool(value[0])
    mask = hour_mask(*hours) if hours else FULL_DAY
    if cls == "B":
        taken = box_mask(value, None)
        return taken & mask != 0 if hours else taken == FULL_DAY
    if boxes:
        if hours:
            flags = box_flags(boxes_touched(value, mask))
            return any(flags[b - 1] for b in boxes)
        busy = 0
        for box in boxes:
            busy |= box_mask(value, box)
        return busy == FULL_DAY
    if hours:
        return 0 not in box_flags(boxes_touched(value, mask))
    return _everything_taken("C", value)


def _hour_bit(hour: int) -> int:
    return 1 << (HOURS_PER_DAY - 1 - hour)


def hour_runs(
    days: RoomDays, cls: str, day: int, hours: tuple[int, int], boxes: Sequence[int]
) -> tuple[HourRun, ...]:
    """The chosen hours of one day (class B, or class C's chosen boxes) as runs that are
    taken, held by another buyer (until the earliest end of the holds on them) or free."""
    booked = days.booked[day]
    sold = 0
    for box in boxes if cls == "C" else (None,):
        sold |= box_mask(booked, box)
    wanted = set(boxes)
    runs: list[HourRun] = []
    for hour in range(*hours):
        bit = _hour_bit(hour)
        state, until = "free", None
        if sold & bit:
            state = "taken"
        else:
            ends = [
                h.expires_ms
                for h in days.holds.get(day, ())
                if h.mask & bit and (cls == "B" or wanted.intersection(h.boxes))
            ]
            if ends:
                state, until = "held", from_ms(min(ends))
        last = runs[-1] if runs else None
        if last is not None and (last.state, last.held_until) == (state, until):
            runs[-1] = HourRun(last.start, hour + 1, state, until)
        else:
            runs.append(HourRun(hour, hour + 1, state, until))
    return tuple(runs)


def day_words(
    days: RoomDays,
    cls: str,
    day: int,
    hours: tuple[int, int] | None,
    boxes: Sequence[int],
) -> DayWords:
    """The calendar's word for one bookable season day of this room."""
    closed = days.closed(day, cls)
    if not closed and hours:
        wanted = hour_mask(*hours)
        closed = next((why for mask, why in days.closures.get(day, ()) if mask & wanted), "")
    if closed:
        return DayWords("closed", reason=closed)
    booked = days.booked[day]
    taken = slots_taken(days, cls, day)
    if _everything_taken(cls, taken):
        if not _everything_taken(cls, booked):
            holds = days.holds.get(day, ())
            return DayWords("held", from_ms(min(h.expires_ms for h in holds)))
        return DayWords("sold_out")
    if _choice_blocked(cls, taken, hours, boxes):
        runs = hour_runs(days, cls, day, hours, boxes) if hours and (cls == "B" or boxes) else ()
        if not _choice_blocked(cls, booked, hours, boxes):
            holds = days.holds.get(day, ())
            ends = [r.held_until for r in runs if r.held_until is not None]
            until = min(ends) if ends else from_ms(min(h.expires_ms for h in holds))
            return DayWords("held", until, runs)
        return DayWords("sold_for", None, runs)
    if any(taken):
        # Hours staff closed (not the chosen ones): partly closed, with the reason.
        why = next((why for _mask, why in days.closures.get(day, ())), "")
        return DayWords("partly", reason=why)
    return DayWords("available")


def _hours_taken(
    cls: str, taken: dict[int, bytes], days: Sequence[int], boxes: Sequence[int]
) -> tuple[int, ...]:
    busy = 0
    for day in days:
        value = taken[day]
        if cls == "B":
            busy |= box_mask(value, None)
        elif boxes:
            for box in boxes:
                busy |= box_mask(value, box)
        else:  # an hour is taken when every box is taken in it
            for hour in range(HOURS_PER_DAY):
                bit = 1 << (23 - hour)
                if not busy & bit and 0 not in box_flags(boxes_touched(value, bit)):
                    busy |= bit
    return tuple(hours_in(busy))


def _boxes_taken(
    taken: dict[int, bytes], days: Sequence[int], hours: tuple[int, int] | None
) -> tuple[int, ...]:
    flags = 0
    for day in days:
        value = taken[day]
        flags |= boxes_touched(value, hour_mask(*hours)) if hours else boxes_full(value)
    return tuple(box for box, mark in enumerate(box_flags(flags), 1) if mark)


def _days_read(
    calendar: Sequence[dt.date], dates: Sequence[dt.date], today: dt.date
) -> list[dt.date]:
    """The days a panel reads: the calendar's bookable ones and the chosen ones."""
    return sorted({*bookable_days(calendar, today), *dates})


def panel_commands(
    *,
    cls: str,
    room: int,
    calendar: Sequence[dt.date],
    dates: Sequence[dt.date] = (),
    now: dt.datetime | None = None,
) -> list[Command]:
    """The one read `panel_state` makes with the same arguments (a view plans it ahead)."""
    days = _days_read(calendar, dates, site_today(now))
    return rooms_commands(cls=cls, rooms=[room], dates=days, editions=True) if days else []


def panel_read(
    *,
    client: redis.Redis,
    cls: str,
    room: int,
    calendar: Sequence[dt.date],
    dates: Sequence[dt.date] = (),
    owner_id: str | None = None,
    now: dt.datetime | None = None,
) -> RoomDays | None:
    """The one read of the room a panel is built from, with the room's edition (ONE round
    trip; None, and no round trip, when no day of `calendar` or `dates` is bookable)."""
    wanted_days = _days_read(calendar, dates, site_today(now))
    if not wanted_days:
        return None
    [read] = rooms_read(
        client=client, cls=cls, rooms=[room], dates=wanted_days, owner_id=owner_id, now=now,
        editions=True,
    )  # fmt: skip
    return read


def panel_state(
    *,
    client: redis.Redis,
    cls: str,
    room: int,
    calendar: Sequence[dt.date],
    dates: Sequence[dt.date] = (),
    hours: tuple[int, int] | None = None,
    boxes: Sequence[int] = (),
    owner_id: str | None = None,
    now: dt.datetime | None = None,
) -> PanelState:
    """The calendar days' words, the taken hours and boxes on `dates`, and (a complete choice)
    its blocked slots: ONE round trip. `dates` must be bookable days of the season."""
    read = panel_read(
        client=client, cls=cls, room=room, calendar=calendar, dates=dates, owner_id=owner_id,
        now=now,
    )  # fmt: skip
    return panel_state_of(
        read, cls=cls, room=room, calendar=calendar, dates=dates, hours=hours, boxes=boxes, now=now
    )


def panel_state_of(
    read: RoomDays | None,
    *,
    cls: str,
    room: int,
    calendar: Sequence[dt.date],
    dates: Sequence[dt.date] = (),
    hours: tuple[int, int] | None = None,
    boxes: Sequence[int] = (),
    now: dt.datetime | None = None,
) -> PanelState:
    """`panel_state` from the room's read (`panel_read` with the same arguments)."""
    today = site_today(now)
    hours = None if cls == "A" else hours
    boxes = tuple(boxes) if cls == "C" else ()
    refusals = day_refusals(calendar, today)
    if read is None:
        empty = tuple(CalendarDay(d, "not_bookable", refusals[d]) for d in calendar)
        return PanelState(empty, (), (), ())
    shown = []
    for date in calendar:
        reason = refusals[date]
        if reason:
            shown.append(CalendarDay(date, "not_bookable", reason))
            continue
        words: DayWords = day_words(read, cls, calendar_day(date), hours, boxes)
        shown.append(CalendarDay(date, words.state, words.reason, words.held_until, words.parts))
    chosen = [calendar_day(d) for d in dates]
    taken = {day: slots_taken(read, cls, day) for day in chosen}
    complete = bool(dates) and (cls == "A" or (hours is not None and (cls == "B" or boxes)))
    blocked = blocked_slots(read, Wanted(cls, room, tuple(dates), hours, boxes)) if complete else []
    return PanelState(
        days=tuple(shown),
        taken_hours=_hours_taken(cls, taken, chosen, boxes) if cls != "A" and chosen else (),
        taken_boxes=_boxes_taken(taken, chosen, hours) if cls == "C" and chosen else (),
        blocked=tuple(blocked),
    )
