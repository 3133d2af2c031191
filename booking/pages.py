"""What the booking pages show, built from the engine's reads: the month calendar, the hour row,
the box grid, taken slots in words. No store access except through booking.selectors."""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass
from itertools import groupby
from typing import Any

import redis
from django.utils import formats
from django.utils.dates import WEEKDAYS, WEEKDAYS_ABBR
from django.utils.translation import gettext as _

from booking.domain import (
    BOXES_PER_ROOM,
    HOURS_PER_DAY,
    Slot,
    day_refusal,
    season_end,
    season_start,
    site_today,
)
from booking.forms import Choices
from booking.selectors import season_availability, taken_boxes, taken_hours


@dataclass(frozen=True)
class Day:
    """One calendar cell."""

    date: dt.date | None  # None: a day of the neighbouring month (an empty cell)
    state: str = ""  # available | sold_out | not_bookable | open (no class/room picked yet)
    reason: str = ""
    chosen: bool = False

    @property
    def disabled(self) -> bool:
        return self.state in ("sold_out", "not_bookable") and not self.chosen

    @property
    def note(self) -> str:
        if self.state == "sold_out":
            return _("Sold out")
        if self.state == "not_bookable":
            return {"past": _("Past"), "today": _("Today"), "outside_season": _("Closed")}.get(
                self.reason, _("Closed")
            )
        return _("Chosen") if self.chosen else ""


@dataclass(frozen=True)
class Month:
    first: dt.date
    weekdays: list[tuple[str, str]]  # (abbreviation, full name), in the locale's order
    weeks: list[list[Day]]
    previous: dt.date | None
    next: dt.date | None
    checked: bool  # availability known (class and room picked)
    previous_query: str = ""
    next_query: str = ""


def season_months() -> list[dt.date]:
    """The first day of every month the season touches."""
    months, month = [], season_start().replace(day=1)
    while month <= season_end():
        months.append(month)
        month = (month + dt.timedelta(days=32)).replace(day=1)
    return months


def month_shown(choices: Choices, now: dt.datetime | None = None) -> dt.date:
    """The month asked for, else the first chosen date's, else the first bookable day's."""
    months = season_months()
    if choices.month in months:
        return choices.month
    if choices.dates and choices.dates[0].replace(day=1) in months:
        return choices.dates[0].replace(day=1)
    tomorrow = site_today(now) + dt.timedelta(days=1)
    first = max(tomorrow, season_start()).replace(day=1)
    return first if first in months else months[0]


def first_weekday() -> int:
    """Python's calendar numbering (0 = Monday) of the locale's first day of the week."""
    django_first = int(formats.get_format("FIRST_DAY_OF_WEEK"))  # 0 = Sunday
    return (django_first - 1) % 7


def month_build(
    *,
    client: redis.Redis,
    choices: Choices,
    owner_id: str | None,
    now: dt.datetime | None = None,
) -> Month:
    """The month's table; with a class and room, each day's availability (one round trip)."""
    first = month_shown(choices, now)
    last = (first + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
    start, end = max(first, season_start()), min(last, season_end())
    states: dict[dt.date, tuple[str, str]] = {}
    checked = bool(choices.cls and choices.room)
    if checked:
        assert choices.room is not None
        for day in season_availability(
            client=client,
            cls=choices.cls,
            room=choices.room,
            hours=choices.hours,
            boxes=choices.boxes or None,
            owner_id=owner_id,
            now=now,
            start=start,
            end=end,
        ):
            states[day.date] = (day.state, day.reason)
    today = site_today(now)
    weekday_first = first_weekday()
    weeks = []
    for week in calendar.Calendar(weekday_first).monthdatescalendar(first.year, first.month):
        row = []
        for date in week:
            if date.month != first.month:
                row.append(Day(None))
                continue
            refusal = day_refusal(date, today)
            if refusal:
                state, reason = "not_bookable", refusal
            else:
                state, reason = states.get(date, ("available" if checked else "open", ""))
            row.append(Day(date, state, reason, date in choices.dates))
        weeks.append(row)
    order = [(weekday_first + i) % 7 for i in range(7)]
    months = season_months()
    index = months.index(first)
    previous = months[index - 1] if index > 0 else None
    following = months[index + 1] if index + 1 < len(months) else None
    return Month(
        first=first,
        weekdays=[(str(WEEKDAYS_ABBR[i]), str(WEEKDAYS[i])) for i in order],
        weeks=weeks,
        previous=previous,
        next=following,
        checked=checked,
        previous_query=choices.query(month=previous) if previous else "",
        next_query=choices.query(month=following) if following else "",
    )


@dataclass(frozen=True)
class Cell:
    """One hour of the hour row or one box of the box grid."""

    number: int
    taken: bool
    chosen: bool

    @property
    def label(self) -> str:
        return f"{self.number:02d}"


def hour_row(
    *, client: redis.Redis, choices: Choices, owner_id: str | None, now: dt.datetime | None = None
) -> list[Cell]:
    """00..23; hours taken on a chosen date (for the chosen boxes) are marked (one round trip
    when dates are chosen, none otherwise)."""
    taken: set[int] = set()
    if choices.cls in ("B", "C") and choices.room and choices.dates:
        taken = set(
            taken_hours(
                client=client,
                cls=choices.cls,
                room=choices.room,
                dates=choices.dates,
                boxes=choices.boxes or None,
                owner_id=owner_id,
                now=now,
            )
        )
    hours = choices.hours
    return [
        Cell(h, h in taken, hours is not None and hours[0] <= h < hours[1])
        for h in range(HOURS_PER_DAY)
    ]


def box_grid(
    *, client: redis.Redis, choices: Choices, owner_id: str | None, now: dt.datetime | None = None
) -> list[Cell]:
    """Boxes 1..100; boxes taken on a chosen date during the chosen hours are marked."""
    taken: set[int] = set()
    if choices.cls == "C" and choices.room and choices.dates:
        taken = set(
            taken_boxes(
                client=client,
                room=choices.room,
                dates=choices.dates,
                hours=choices.hours,
                owner_id=owner_id,
                now=now,
            )
        )
    return [Cell(b, b in taken, b in choices.boxes) for b in range(1, BOXES_PER_ROOM + 1)]


def slots_described(slots: tuple[Slot, ...] | list[Slot]) -> list[str]:
    """Taken slots in words, consecutive hours merged: '8 December 2026 · 08:00-12:00 · box 5'."""
    lines: list[str] = []

    def key(slot: Slot) -> tuple[dt.date, int, bool]:
        return (slot.date, slot.box or 0, slot.held)

    for (date, box, held), group in groupby(sorted(slots, key=key), key=key):
        hours = sorted(s.hour for s in group if s.hour is not None)
        parts = [formats.date_format(date, "DATE_FORMAT")]
        runs: list[list[int]] = []
        for hour in hours:
            if runs and runs[-1][1] == hour:
                runs[-1][1] = hour + 1
            else:
                runs.append([hour, hour + 1])
        if runs:
            parts.append(", ".join(f"{a:02d}:00–{b:02d}:00" for a, b in runs))
        if box:
            parts.append(_("box %(box)s") % {"box": box})
        line = " · ".join(parts)
        if held:
            line = _("%(slot)s (held by another buyer for a few minutes)") % {"slot": line}
        lines.append(line)
    return lines


def class_lines() -> list[dict[str, Any]]:
    """The three classes with one line each."""
    return [
        {"code": "A", "name": _("Class A"), "line": _("The finest: one safe, booked by the day.")},
        {
            "code": "B",
            "name": _("Class B"),
            "line": _("Fine: a second safe, a new treasure every hour."),
        },
        {
            "code": "C",
            "name": _("Class C"),
            "line": _("Value: 100 boxes, a new treasure in every box every hour."),
        },
    ]
