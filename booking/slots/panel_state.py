"""The booking page's availability from ONE read of the room (booked bytes and other buyers'
holds kept apart, as the building map reads them): each calendar day's word, the hours and
boxes taken on the chosen days, and exactly which chosen slots are sold or held."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import redis

from booking.domain.rules import BOXES_PER_ROOM, HOURS_PER_DAY, day_refusal, season_day, site_today
from booking.slots.building_map import boxes_touched, rooms_commands, rooms_read
from booking.slots.choice_check import (
    Blocked,
    DayWords,
    Wanted,
    blocked_slots,
    day_words,
    slots_taken,
)
from strongroom.ahead import Command


@dataclass(frozen=True)
class CalendarDay:
    date: dt.date
    state: str  # available | partly | held | sold_for | sold_out | not_bookable
    reason: str = ""  # not_bookable: past | today | outside_season
    held_until: dt.datetime | None = None


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


def _hours_taken(
    cls: str, taken: dict[int, bytes], days: Sequence[int], boxes: Sequence[int]
) -> tuple[int, ...]:
    busy = 0
    for day in days:
        value = taken[day]
        if cls == "B":
            busy |= int.from_bytes(value)
        elif boxes:
            for box in boxes:
                busy |= int.from_bytes(value[(box - 1) * 3 : box * 3])
        else:  # an hour is taken when every box is taken in it
            for hour in range(HOURS_PER_DAY):
                bit = 1 << (23 - hour)
                if not busy & bit and 0 not in boxes_touched(value, bit).to_bytes(BOXES_PER_ROOM):
                    busy |= bit
    return tuple(h for h in range(HOURS_PER_DAY) if busy & (1 << (23 - h)))


def _boxes_taken(
    taken: dict[int, bytes], days: Sequence[int], hours: tuple[int, int] | None
) -> tuple[int, ...]:
    flags = 0
    for day in days:
        value = taken[day]
        if hours:
            mask = sum(1 << (23 - h) for h in range(*hours))
            flags |= boxes_touched(value, mask)
        else:  # taken all day
            full = -1
            for column in range(3):
                column_full = bytes(1 if b == 0xFF else 0 for b in value[column::3])
                full &= int.from_bytes(column_full)
            flags |= full
    marks = flags.to_bytes(BOXES_PER_ROOM)
    return tuple(box for box, mark in enumerate(marks, 1) if mark)


def _days_read(
    calendar: Sequence[dt.date], dates: Sequence[dt.date], today: dt.date
) -> list[dt.date]:
    """The days a panel reads: the calendar's bookable ones and the chosen ones."""
    return sorted({*(d for d in calendar if not day_refusal(d, today)), *dates})


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
    return rooms_commands(cls=cls, rooms=[room], dates=days) if days else []


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
    today = site_today(now)
    wanted_days = _days_read(calendar, dates, today)
    hours = None if cls == "A" else hours
    boxes = tuple(boxes) if cls == "C" else ()
    if not wanted_days:
        empty = tuple(CalendarDay(d, "not_bookable", day_refusal(d, today)) for d in calendar)
        return PanelState(empty, (), (), ())
    [read] = rooms_read(
        client=client, cls=cls, rooms=[room], dates=wanted_days, owner_id=owner_id, now=now
    )
    shown = []
    for date in calendar:
        reason = day_refusal(date, today)
        if reason:
            shown.append(CalendarDay(date, "not_bookable", reason))
            continue
        words: DayWords = day_words(read, cls, season_day(date), hours, boxes)
        shown.append(CalendarDay(date, words.state, "", words.held_until))
    chosen = [season_day(d) for d in dates]
    taken = {day: slots_taken(read, cls, day) for day in chosen}
    complete = bool(dates) and (cls == "A" or (hours is not None and (cls == "B" or boxes)))
    blocked = blocked_slots(read, Wanted(cls, room, tuple(dates), hours, boxes)) if complete else []
    return PanelState(
        days=tuple(shown),
        taken_hours=_hours_taken(cls, taken, chosen, boxes) if cls != "A" and chosen else (),
        taken_boxes=_boxes_taken(taken, chosen, hours) if cls == "C" and chosen else (),
        blocked=tuple(blocked),
    )
