"""What a buyer can still book in one room: the calendar, free and taken hours and boxes, and
the booking page's panel from one read of the room's bitmap (see booking.slots.bitmap)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import redis

from booking.domain.rules import (
    BOXES_PER_ROOM,
    CLASSES,
    HOURS_PER_DAY,
    day_refusal,
    hour_mask,
    in_season,
    room_count,
    season_day,
    season_end,
    season_start,
    site_today,
)
from booking.slots.bitmap import FULL, boxes_full, boxes_touching, mask_of, read_days, read_slots


@dataclass(frozen=True)
class DayAvailability:
    date: dt.date
    state: str  # "available" | "sold_out" | "not_bookable"
    reason: str = ""  # "" | "past" | "today" | "outside_season"


def _check(cls: str, room: int) -> None:
    if cls not in CLASSES:
        raise ValueError(f"no class {cls!r}")
    if isinstance(room, bool) or not isinstance(room, int) or not 1 <= room <= room_count():
        raise ValueError(f"no room {room!r}")


def _day_available(
    cls: str,
    day: bytes,
    hours: tuple[int, int] | None,
    boxes: Sequence[int] | None,
) -> bool:
    if cls != "C":
        value = mask_of(cls, day, 0)
        if cls == "A":
            return value == 0
        return value & hour_mask(*hours) == 0 if hours else value != FULL
    if boxes:
        if hours:
            touching = boxes_touching(day, hour_mask(*hours))
            return not any(touching[box - 1] for box in boxes)
        busy = 0
        for box in boxes:
            busy |= mask_of(cls, day, box)
        return busy != FULL
    if hours:
        return 0 in boxes_touching(day, hour_mask(*hours))
    return 0 in boxes_full(day)


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
    taken = read_days(client, cls, room, bookable, owner_id, now)
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
    taken = read_slots(client, cls, room, [season_day(date)], boxes, owner_id, now)
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
    taken = read_slots(client, "C", room, [day], range(1, BOXES_PER_ROOM + 1), owner_id, now)
    return [box for (_, box), value in sorted(taken.items()) if value & mask == 0]


def _dates_checked(cls: str, room: int, dates: Sequence[dt.date]) -> list[int]:
    _check(cls, room)
    return [season_day(d) for d in sorted(set(dates)) if in_season(d)]


def _hours_from(
    cls: str, taken: dict[int, bytes], days: Sequence[int], boxes: Sequence[int] | None
) -> list[int]:
    busy = 0
    for day in days:
        if cls == "B":
            busy |= mask_of(cls, taken[day], 0)
        elif boxes:
            for box in boxes:
                busy |= mask_of(cls, taken[day], box)
        else:  # an hour is taken when every box is taken in it
            for hour in range(HOURS_PER_DAY):
                bit = 1 << (23 - hour)
                if not busy & bit and 0 not in boxes_touching(taken[day], bit):
                    busy |= bit
    return [hour for hour in range(HOURS_PER_DAY) if busy & (1 << (23 - hour))]


def _boxes_from(
    taken: dict[int, bytes], days: Sequence[int], hours: tuple[int, int] | None
) -> list[int]:
    mask = hour_mask(*hours) if hours else FULL
    flags = 0
    for day in days:
        found = boxes_touching(taken[day], mask) if hours else boxes_full(taken[day])
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
    taken = read_days(client, cls, room, days, owner_id, now)
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
    return _boxes_from(read_days(client, "C", room, days, owner_id, now), days, hours)


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
    taken = read_days(client, cls, room, sorted(bookable | set(chosen)), owner_id, now)
    return PanelAvailability(
        days=_days_from(cls, taken, calendar, today, hours, boxes),
        taken_hours=_hours_from(cls, taken, chosen, boxes) if cls != "A" and chosen else [],
        taken_boxes=_boxes_from(taken, chosen, hours) if cls == "C" and chosen else [],
    )
