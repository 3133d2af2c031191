"""The booking panel's state and the month calendar of a room, built from the one read of the
room and kept per room edition (booking.web.kept): the pickers (hour row, box grid), what
stands in the way of a complete choice, and the digest an open page refreshes with."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import redis
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language

from booking.domain.rules import BOXES_PER_ROOM, HOURS_PER_DAY, format_room, room_count, site_today
from booking.domain.window import window_current
from booking.slots.choice_check import Blocked
from booking.slots.panel_state import PanelState, panel_commands, panel_read, panel_state_of
from booking.slots.room_read import RoomDays
from booking.web.forms import Choices
from booking.web.kept import Kept
from booking.web.pick_page import (
    Month,
    calendar_of,
    class_lines,
    map_url,
    month_bounds,
    month_table,
)
from booking.web.pieces import hour_options, pieces
from strongroom.ahead import Command
from strongroom.clock import to_ms
from strongroom.recent import Flights


def panel_reads(choices: Choices, *, with_choice: bool = True) -> list[Command]:
    """The one read `panel_build` (with the chosen dates) or `month_build` (without) makes
    for `choices`: what a view sends ahead with the request's identity (strongroom/ahead.py)."""
    if not (choices.cls and choices.room):
        return []
    _first, start, end = month_bounds(choices, None)
    return panel_commands(
        cls=choices.cls,
        room=choices.room,
        calendar=calendar_of(start, end),
        dates=choices.dates if with_choice else (),
    )


def _read(
    client: redis.Redis,
    choices: Choices,
    owner_id: str | None,
    now: dt.datetime | None,
    start: dt.date,
    end: dt.date,
    *,
    with_choice: bool,
) -> RoomDays | None:
    assert choices.room is not None
    return panel_read(
        client=client,
        cls=choices.cls,
        room=choices.room,
        calendar=calendar_of(start, end),
        dates=choices.dates if with_choice else (),
        owner_id=owner_id,
        now=now,
    )


def _state(
    read: RoomDays | None,
    choices: Choices,
    now: dt.datetime | None,
    start: dt.date,
    end: dt.date,
    *,
    with_choice: bool,
) -> PanelState:
    assert choices.room is not None
    return panel_state_of(
        read,
        cls=choices.cls,
        room=choices.room,
        calendar=calendar_of(start, end),
        dates=choices.dates if with_choice else (),
        hours=choices.hours,
        boxes=choices.boxes,
        now=now,
    )


# The month tables and panels built from a room, kept per room edition (booking.web.kept).
KEPT_MONTHS: Kept[Month] = Kept()
KEPT_PANELS: Kept[Panel] = Kept()
_RENDERING = Flights()  # renderings of kept panels under way (Panel.kept_html)


def _kept_key(kind: str, choices: Choices, now: dt.datetime | None) -> tuple[object, ...]:
    """What a kept piece depends on besides the room: the choices, the language, today and
    the sales window (the days on sale and the words of past days follow from the last two)."""
    return (kind, choices, get_language(), site_today(now), window_current())


def _now_ms(now: dt.datetime | None) -> int:
    return to_ms(now or dt.datetime.now(tz=dt.UTC))


def month_build(
    *,
    client: redis.Redis,
    choices: Choices,
    owner_id: str | None,
    now: dt.datetime | None = None,
) -> Month:
    """The month's table alone (month navigation); with a class and room, each day's
    availability (one round trip), kept per room edition."""
    first, start, end = month_bounds(choices, now)
    if not (choices.cls and choices.room):
        return month_table(choices, first, None, now)
    read = _read(client, choices, owner_id, now, start, end, with_choice=False)

    def build() -> Month:
        found = _state(read, choices, now, start, end, with_choice=False)
        return month_table(choices, first, found.days, now)

    key = _kept_key("month", choices, now)
    return KEPT_MONTHS.get_or_build(key, read, owner_id, _now_ms(now), build)


@dataclass(frozen=True)
class Cell:
    """One hour of the hour row or one box of the box grid."""

    number: int
    taken: bool
    chosen: bool

    @property
    def label(self) -> str:
        return f"{self.number:02d}"


@dataclass(frozen=True)
class Panel:
    """The pickers' state: the month table, the hour row (B/C), the box grid (C), and what
    stands in the way of a complete choice (its sold or held slots, else ())."""

    month: Month
    hours: list[Cell]
    boxes: list[Cell]
    blocked: tuple[Blocked, ...] = ()
    stamp: str = ""

    @functools.cached_property
    def hour_cells(self) -> SafeString:
        """The hour row as HTML (booking/_hour_cell.html)."""
        return pieces("booking/_hour_cell.html", "cell", self.hours)

    @functools.cached_property
    def box_cells(self) -> SafeString:
        """The box grid as HTML (booking/_box_cell.html)."""
        return pieces("booking/_box_cell.html", "cell", self.boxes)

    def calendar_html(self, choices: Choices) -> SafeString:
        return self.month.html(choices)

    def pickers_html(self, choices: Choices, *, signed_in: bool) -> SafeString:
        """The pickers form (booking/_pickers.html) for these choices (the key of a kept
        panel), rendered once per kept panel and signed in or not."""
        name = f"_pickers_{signed_in}"
        rendered = self.__dict__.get(name)
        if rendered is None:
            context = {
                "choices": choices,
                "signed_in": signed_in,
                "classes": class_lines(),
                "last_room": format_room(room_count()),
                "map_url": map_url(choices),
                "box_cells": self.box_cells,
                "hour_cells": self.hour_cells,
                "calendar_html": self.calendar_html(choices),
                "start_options": hour_options(range(24), choices.start),
                # The To list offers only hours after a chosen start: a keyboard stepping down
                # it from "--:--" meets 10:00 first after a start of 9, not 01:00.
                "end_options": hour_options(range((choices.start or 0) + 1, 25), choices.end),
            }
            rendered = mark_safe(render_to_string("booking/_pickers.html", context))  # noqa: S308
            self.__dict__[name] = rendered
        return rendered

    def kept_html(self, key: Hashable, render: Callable[[], str]) -> SafeString:
        """A rendering of this panel kept with it: `render()` once per `key` (which names all
        it depends on besides the panel) while the panel is kept; so it is as exact as the
        panel itself (booking.web.kept), and must hold nothing of one person."""
        kept: dict[Hashable, SafeString] = self.__dict__.setdefault("_kept_html", {})

        def rendered() -> SafeString:
            kept[key] = mark_safe(render())  # noqa: S308 (a template's own output)
            return kept[key]

        # The refusals of one race render it once (this panel is alive while they wait).
        return _RENDERING.once((id(self), key), lambda: kept.get(key), rendered)


def panel_build(
    *,
    client: redis.Redis,
    choices: Choices,
    owner_id: str | None,
    now: dt.datetime | None = None,
) -> Panel:
    """The calendar, the hour row, the box grid and the chosen slots' state from one read of
    the room (one round trip once a class and room are picked, none before), kept per room
    edition. Hours and boxes are marked taken on the chosen dates (for the chosen boxes,
    during the chosen hours)."""
    first, start, end = month_bounds(choices, now)
    if not (choices.cls and choices.room):
        return _panel(choices, first, None, now)
    read = _read(client, choices, owner_id, now, start, end, with_choice=True)

    def build() -> Panel:
        found = _state(read, choices, now, start, end, with_choice=True)
        return _panel(choices, first, found, now)

    key = _kept_key("panel", choices, now)
    return KEPT_PANELS.get_or_build(key, read, owner_id, _now_ms(now), build)


def _panel(
    choices: Choices, first: dt.date, found: PanelState | None, now: dt.datetime | None
) -> Panel:
    hours_taken = set(found.taken_hours if found else ())
    boxes_taken = set(found.taken_boxes if found else ())
    chosen = choices.hours
    return Panel(
        month=month_table(choices, first, found.days if found else None, now),
        hours=[
            Cell(h, h in hours_taken, chosen is not None and chosen[0] <= h < chosen[1])
            for h in range(HOURS_PER_DAY)
        ]
        if choices.cls in ("B", "C")
        else [],
        boxes=[Cell(b, b in boxes_taken, b in choices.boxes) for b in range(1, BOXES_PER_ROOM + 1)]
        if choices.cls == "C"
        else [],
        blocked=found.blocked if found else (),
        stamp=found.stamp if found else "",
    )
