"""What the booking pages show, built from the engine's reads: the month calendar, the hour row,
the box grid, taken slots in words. No store access except through booking.slots.panel_state and
booking.slots.choice_check."""

from __future__ import annotations

import calendar
import datetime as dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import formats
from django.utils.dates import WEEKDAYS, WEEKDAYS_ABBR
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language, pgettext
from django.utils.translation import gettext as _

from booking.domain.rules import (
    day_refusals,
    local_now,
    season_bounds,
    season_months,
    site_today,
)
from booking.domain.site_time import clock_bare
from booking.slots.panel_state import (
    CalendarDay,
    HourRun,
)
from booking.web.forms import Choices
from booking.web.pieces import pieces
from strongroom.zone import zone_name


@dataclass(frozen=True)
class Day:
    """One calendar cell."""

    date: dt.date | None  # None: a day of the neighbouring month (an empty cell)
    # available | partly | held | sold_for | sold_out | closed | not_bookable | open (nothing
    # picked yet)
    state: str = ""
    reason: str = ""
    chosen: bool = False
    held_until: dt.datetime | None = None
    hours: tuple[int, int] | None = None  # sold_for: the chosen hours
    parts: tuple[HourRun, ...] = ()  # sold_for | held: the chosen hours' runs

    @property
    def disabled(self) -> bool:
        blocked = ("sold_out", "sold_for", "held", "closed", "not_bookable")
        return self.state in blocked and not self.chosen

    @property
    def note(self) -> str:
        if self.state in ("sold_for", "held") and len(self.parts) > 1:
            return runs_described(self.parts)
        if self.state == "sold_out":
            return _("Sold out")
        if self.state == "closed":
            return _("Closed")  # the reason: under the calendar (`Month.closures`)
        if self.state == "sold_for":
            if self.hours:
                start, end = self.hours
                return _("Sold out for %(hours)s") % {"hours": f"{start:02d}:00–{end:02d}:00"}
            return _("Sold out for these boxes")
        if self.state == "held" and self.held_until is not None:
            return _("Held until %(time)s") % {"time": clock_bare(self.held_until)}
        if self.state == "partly":
            return _("Partly closed") if self.reason else _("Partly booked")
        if self.state == "not_bookable":
            # Outside the days on sale ("Closed" is the staff's word for a closure, above).
            reasons = {"past": _("Past"), "today": _("Today"), "outside_season": _("Not on sale")}
            return reasons.get(self.reason, _("Not on sale"))
        return _("Chosen") if self.chosen else ""


def runs_described(runs: Sequence[HourRun]) -> str:
    """A day's chosen hours that are not all alike, run by run: "10:00-12:00 taken,
    12:00-14:00 free" (times on the site's clock; the calendar names the zone once, under
    its cells: `Month.timed`)."""
    words = []
    for run in runs:
        span = f"{run.start:02d}:00–{run.end:02d}:00"
        if run.state == "taken":
            words.append(_("%(hours)s taken") % {"hours": span})
        elif run.state == "held" and run.held_until is not None:
            until = local_now(run.held_until).strftime("%H:%M")
            words.append(_("%(hours)s held until %(time)s") % {"hours": span, "time": until})
        else:
            words.append(_("%(hours)s free") % {"hours": span})
    return pgettext("between list items", ", ").join(words)


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
    wait_query: str = ""  # the waiting list's form for this choice and month ("": none yet)

    @property
    def rows(self) -> list[SafeString]:
        """Each week's seven cells as HTML (booking/_day_cell.html)."""
        return [pieces("booking/_day_cell.html", "day", week) for week in self.weeks]

    @property
    def timed(self) -> bool:
        """Whether a cell's note shows a time (held until, the hours sold out, their runs): the
        calendar then names the zone once, under its cells."""
        return any(day.held_until or day.hours or day.parts for week in self.weeks for day in week)

    @property
    def zone(self) -> str:
        return zone_name()

    @property
    def closures(self) -> list[tuple[str, bool, list[dt.date]]]:
        """The staff's reasons for the month's closed days, each with whether only some hours
        of them are closed, and the days, in order: told under the calendar, as a phone's cell
        is too narrow for a reason."""
        days: dict[tuple[str, bool], list[dt.date]] = {}
        for week in self.weeks:
            for day in week:
                if day.date is not None and day.reason and day.state in ("closed", "partly"):
                    days.setdefault((day.reason, day.state == "partly"), []).append(day.date)
        return [(reason, some, dates) for (reason, some), dates in days.items()]

    def html(self, choices: Choices) -> SafeString:
        """The calendar (booking/_calendar.html) of these choices; rendered once for a kept
        month (the choices are part of a kept month's key)."""
        rendered = self.__dict__.get("_html")
        if rendered is None:
            context = {"choices": choices, "month": self}
            rendered = mark_safe(render_to_string("booking/_calendar.html", context))  # noqa: S308
            self.__dict__["_html"] = rendered
        return rendered


def month_shown(choices: Choices, now: dt.datetime | None = None) -> dt.date:
    """The month asked for, else the first chosen date's, else the first bookable day's."""
    months = season_months(now)
    if choices.month in months:
        return choices.month
    if choices.dates and choices.dates[0].replace(day=1) in months:
        return choices.dates[0].replace(day=1)
    tomorrow = site_today(now) + dt.timedelta(days=1)
    first = max(tomorrow, season_bounds(now)[0]).replace(day=1)
    return first if first in months else months[0]


def first_weekday() -> int:
    """Python's calendar numbering (0 = Monday) of the locale's first day of the week."""
    django_first = int(formats.get_format("FIRST_DAY_OF_WEEK"))  # 0 = Sunday
    return (django_first - 1) % 7


def month_bounds(choices: Choices, now: dt.datetime | None) -> tuple[dt.date, dt.date, dt.date]:
    """The month shown, and the part of it inside the season (first and last day)."""
    first = month_shown(choices, now)
    last = (first + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
    start, end = season_bounds(now)
    return first, max(first, start), min(last, end)


@functools.lru_cache(maxsize=64)
def _weekday_names(language: str | None, weekday_first: int) -> tuple[tuple[str, str], ...]:
    """The calendar's head, (short, long) names from `weekday_first` on, in `language` (the
    active one: the key keeps the languages apart)."""
    order = [(weekday_first + i) % 7 for i in range(7)]
    names = [(str(WEEKDAYS_ABBR[i]), str(WEEKDAYS[i])) for i in order]
    if (language or "").startswith("zh"):
        # "星期一" is Chinese's abbreviation too: a phone's narrow column takes its last one.
        names = [(full[-1], full) for _abbr, full in names]
    return tuple(names)


def month_table(
    choices: Choices,
    first: dt.date,
    availability: Sequence[CalendarDay] | None,
    now: dt.datetime | None,
) -> Month:
    """The month's table from the days' availability (None: no class and room picked yet)."""
    states = {day.date: day for day in availability or []}
    checked = availability is not None
    today = site_today(now)
    weekday_first = first_weekday()
    weeks = []
    dates = calendar.Calendar(weekday_first).monthdatescalendar(first.year, first.month)
    refusals = day_refusals((date for week in dates for date in week), today)
    for week in dates:
        row = []
        for date in week:
            if date.month != first.month:
                row.append(Day(None))
                continue
            refusal = refusals[date]
            known = states.get(date)
            if refusal:
                row.append(Day(date, "not_bookable", refusal, date in choices.dates))
            elif known is not None:
                hours = choices.hours if known.state == "sold_for" else None
                chosen = date in choices.dates
                until = known.held_until
                row.append(Day(date, known.state, known.reason, chosen, until, hours, known.parts))
            else:
                state = "available" if checked else "open"
                row.append(Day(date, state, "", date in choices.dates))
        weeks.append(row)
    months = season_months(now)
    index = months.index(first)
    previous = months[index - 1] if index > 0 else None
    following = months[index + 1] if index + 1 < len(months) else None
    return Month(
        first=first,
        weekdays=list(_weekday_names(get_language(), weekday_first)),
        weeks=weeks,
        previous=previous,
        next=following,
        checked=checked,
        previous_query=choices.query(month=previous) if previous else "",
        next_query=choices.query(month=following) if following else "",
        wait_query=choices.query(month=first) if waitable(choices) else "",
    )


def waitable(choices: Choices) -> bool:
    """Whether the waiting list can take these choices, but for the day: a room, and the hours
    for class B, the hours and a box for class C."""
    if choices.room is None:
        return False
    return choices.cls == "A" or bool(choices.hours and (choices.cls == "B" or choices.boxes))


def calendar_of(start: dt.date, end: dt.date) -> list[dt.date]:
    """Every day from `start` to `end`."""
    return [start + dt.timedelta(days=i) for i in range((end - start).days + 1)]


def map_url(choices: Choices) -> str:
    """The building map for the same class, days and hours (every room at once)."""
    pairs: list[tuple[str, str]] = [("cls", choices.cls or "C")]
    pairs += [("date", d.isoformat()) for d in choices.dates[:7]]
    if choices.hours and choices.cls != "A":
        pairs += [("start", str(choices.hours[0])), ("end", str(choices.hours[1]))]
    return reverse("booking:find") + "?" + urlencode(pairs)


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
