"""What the building map page shows: the rooms as tiles grouped in rows of fixed width, counts,
the class C box grid, and the links that fill in the booking page (its query: find_query)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import redis
from django.conf import settings
from django.urls import reverse
from django.utils import formats
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from booking.domain.rules import (
    calendar_day,
    format_room,
    room_count,
    season_end,
    season_start,
)
from booking.domain.site_time import clock, hour_range, zone_name
from booking.slots.building_map import (
    MAP_MAX_DAYS,
    BoxRow,
    BuildingMap,
    RoomState,
    building_map_read,
)
from booking.web.find_query import MapQuery, first_bookable
from booking.web.find_refresh import map_token
from booking.web.pieces import pieces
from strongroom.templatetags.punctuation import listed

GROUP_WIDTH = 50  # rooms per row group: "Rooms 001-050"


# --- rendered pieces (booking.web.pieces): 300 tiles and up to 100 grid rows a page ---------


@dataclass(frozen=True)
class RoomTile:
    """One room as the map shows it: words first (state, what is left), then the links."""

    label: str
    state: str
    state_text: str
    detail: str
    href: str  # the booking page with this room filled in ('' when nothing can be booked)
    grid_href: str  # class C: this map with the room's box grid open
    box_href: str  # class C: the booking page with the first free box filled in
    box_text: str
    wait_href: str = ""  # sold out or held: the waiting list for it (its first day)


def _book_url(params: list[tuple[str, str]]) -> str:
    return reverse("booking:pick") + "?" + urlencode(params)


def _date_params(dates: tuple[dt.date, ...]) -> list[tuple[str, str]]:
    return [("date", d.isoformat()) for d in dates]


class _Words:
    """The words and link parts every tile of one map shares, looked up once a request (300
    tiles would otherwise call gettext and urlencode a few thousand times)."""

    def __init__(self, bmap: BuildingMap, query: MapQuery) -> None:
        self.cls = bmap.cls
        self.states = {"free": _("Free"), "partly": _("Partly free"), "sold_out": _("Sold out")}
        self.closed = _("Closed: %(reason)s")
        self.closed_some = _("some hours closed: %(reason)s")
        total = bmap.rooms[0].total if bmap.rooms else 0
        if bmap.cls == "A":
            detail = ngettext(
                "%(free)s of %(total)s day free", "%(free)s of %(total)s days free", total
            )
        elif bmap.cls == "B":
            detail = ngettext(
                "%(free)s of %(total)s hour free", "%(free)s of %(total)s hours free", total
            )
        else:
            detail = ngettext(
                "%(free)s of %(total)s box free", "%(free)s of %(total)s boxes free", total
            )
        self.detail = detail
        self.some_days = ngettext(
            "free hours on %(free)s of %(total)s day",
            "free hours on %(free)s of %(total)s days",
            len(bmap.dates),
        )
        self.held_until = _("Held until %(time)s")
        self.held_some = _("%(count)s held until %(time)s")
        self.book_box = _("Book box %(box)s")
        self.book = reverse("booking:pick") + "?"
        self.wait = reverse("booking:wait") + "?"
        self.first_date = urlencode(_date_params(bmap.dates[:1]))
        self.dates = urlencode(_date_params(bmap.dates))
        self.hours = f"start={bmap.hours[0]}&end={bmap.hours[1]}"
        self.grid = "?" + query.query(room=None)
        self.by_day = {calendar_day(d): d for d in bmap.dates}
        self._clocks: dict[dt.datetime, str] = {}

    def free_dates(self, days: tuple[int, ...]) -> str:
        """The link's dates for a partly free room: only its free days (a sold-out day
        would open the booking page blocked)."""
        return urlencode(_date_params(tuple(self.by_day[d] for d in days if d in self.by_day)))

    def clock(self, moment: dt.datetime) -> str:
        if moment not in self._clocks:
            self._clocks[moment] = clock(moment)
        return self._clocks[moment]


def _free_run(hours: tuple[int, ...]) -> str:
    """The first longest run of consecutive free hours, as the link's start and end."""
    best: tuple[int, int] = (hours[0], hours[0] + 1)
    start = hours[0]
    for before, hour in zip(hours, (*hours[1:], None), strict=True):
        if hour != before + 1:
            if before + 1 - start > best[1] - best[0]:
                best = (start, before + 1)
            start = hour if hour is not None else start
    return f"start={best[0]}&end={best[1]}"


def _tile(words: _Words, state: RoomState) -> RoomTile:
    if state.state == "closed":
        state_text = words.closed % {"reason": state.closed}
    elif state.state == "held" and state.held_until is not None:
        state_text = words.held_until % {"time": words.clock(state.held_until)}
    else:
        state_text = words.states.get(state.state, words.states["sold_out"])
    if words.cls == "B" and state.free_days:  # free hours on some of the days, none on all
        detail = words.some_days % {"free": state.free, "total": len(words.by_day)}
    else:
        detail = words.detail % {"free": state.free, "total": state.total}
    if state.closed and state.state != "closed":  # some of its hours closed, the rest counted
        detail += " · " + words.closed_some % {"reason": state.closed}
    if state.held and state.state != "held" and state.held_until is not None:
        held = {"count": state.held, "time": words.clock(state.held_until)}
        detail += " · " + words.held_some % held
    href = box_href = box_text = grid_href = ""
    bookable = state.state in ("free", "partly")
    if words.cls == "A" and bookable:
        dates = words.dates if state.state == "free" else words.free_dates(state.free_days)
        href = f"{words.book}cls=A&room={state.room}&{dates}"
    elif words.cls == "B" and bookable:
        hours = words.hours if state.state == "free" else _free_run(state.free_hours)
        dates = words.free_dates(state.free_days) if state.free_days else words.dates
        href = f"{words.book}cls=B&room={state.room}&{hours}&{dates}"
    elif words.cls == "C":
        grid_href = f"{words.grid}&room={state.room}#room-grid"
        if state.first_box is not None:
            box = state.first_box
            box_href = f"{words.book}cls=C&room={state.room}&box={box}&{words.hours}&{words.dates}"
            box_text = words.book_box % {"box": box}
    wait_href = ""
    if state.state in ("sold_out", "held"):
        hours = "" if words.cls == "A" else f"&{words.hours}"
        first_box = "&box=1" if words.cls == "C" else ""  # every box is taken: wait for box 1
        wait_href = (
            f"{words.wait}cls={words.cls}&room={state.room}{hours}{first_box}&{words.first_date}"
        )
    return RoomTile(
        label=format_room(state.room),
        state=state.state,
        state_text=state_text,
        detail=detail,
        href=href,
        grid_href=grid_href,
        box_href=box_href,
        box_text=box_text,
        wait_href=wait_href,
    )


@dataclass(frozen=True)
class GridRowView:
    box: int
    cells: tuple[tuple[str, str, str], ...]  # (state, visible text, link or '')
    whole_href: str  # the booking page with this box for the whole range ('' if not free)
    whole_text: str


def _grid_row(bmap: BuildingMap, room: int, row: BoxRow) -> GridRowView:
    """One box's row: its links book the cell (or the whole range) on every searched day."""
    dates = _date_params(bmap.dates)
    base = [("cls", "C"), ("room", str(room)), ("box", str(row.box))]
    cells = []
    for cell in row.cells:
        if cell.state == "free":
            hour = [("start", str(cell.hour)), ("end", str(cell.hour + 1))]
            href = _book_url([*base, *hour, *dates])
            cells.append(("free", _("free"), href))
        elif cell.state == "held" and cell.held_until is not None:
            until = clock(cell.held_until)
            cells.append(("held", _("held until %(time)s") % {"time": until}, ""))
        else:
            cells.append(("sold_out", _("sold out"), ""))
    whole_href = whole_text = ""
    if row.free_all:
        hours = [("start", str(bmap.hours[0])), ("end", str(bmap.hours[1]))]
        whole_href = _book_url([*base, *hours, *dates])
        whole_text = _("Book box %(box)s, %(hours)s") % {
            "box": row.box,
            "hours": f"{bmap.hours[0]:02d}:00–{bmap.hours[1]:02d}:00",
        }
    return GridRowView(row.box, tuple(cells), whole_href, whole_text)


@dataclass(frozen=True)
class RoomGroup:
    title: str
    anchor: str
    html: SafeString
    shown: int


def _groups(tiles: list[RoomTile]) -> list[RoomGroup]:
    groups: list[RoomGroup] = []
    by_start: dict[int, list[RoomTile]] = {}
    for tile in tiles:
        by_start.setdefault((int(tile.label) - 1) // GROUP_WIDTH, []).append(tile)
    for index, members in sorted(by_start.items()):
        first = index * GROUP_WIDTH + 1
        last = min(first + GROUP_WIDTH - 1, room_count())
        title = _("Rooms %(first)s–%(last)s") % {
            "first": format_room(first),
            "last": format_room(last),
        }
        html = pieces("booking/_map_room.html", "tile", members)
        groups.append(RoomGroup(title, f"rooms-{format_room(first)}", html, len(members)))
    return groups


def _counts(bmap: BuildingMap) -> list[str]:
    free, partly = bmap.count("free"), bmap.count("partly")
    held, sold = bmap.count("held"), bmap.count("sold_out")
    return [
        ngettext("%(n)s room free", "%(n)s rooms free", free) % {"n": free},
        ngettext("%(n)s room partly free", "%(n)s rooms partly free", partly) % {"n": partly},
        ngettext("%(n)s room held", "%(n)s rooms held", held) % {"n": held},
        ngettext("%(n)s room sold out", "%(n)s rooms sold out", sold) % {"n": sold},
    ] + (  # said only when staff closed some: the counts add up to every room
        [ngettext("%(n)s room closed", "%(n)s rooms closed", closed) % {"n": closed}]
        if (closed := bmap.count("closed"))
        else []
    )


CLASS_CHOICES = (
    ("A", gettext_lazy("Class A (a day)")),
    ("B", gettext_lazy("Class B (hours)")),
    ("C", gettext_lazy("Class C (boxes, hours)")),
)


def map_read(
    *,
    client: redis.Redis,
    query: MapQuery,
    owner_id: str | None,
    now: dt.datetime | None = None,
) -> BuildingMap | None:
    """The map for the query (one store round trip), or None before a class and a day are
    chosen."""
    if not query.ready:
        return None
    return building_map_read(
        client=client,
        cls=query.cls,
        dates=query.dates,
        hours=query.hours,
        rooms=query.rooms,
        grid_room=query.grid_room,
        owner_id=owner_id,
        now=now,
    )


def map_context(
    *, query: MapQuery, bmap: BuildingMap | None, now: dt.datetime | None = None
) -> dict[str, Any]:
    """Everything the map page and its fragment show, from the map read for the query."""
    context: dict[str, Any] = {
        "query": query,
        "problems": list(query.problems),
        "query_string": query.query(),
        "class_choices": CLASS_CHOICES,
        "start_options": list(range(24)),
        "end_options": list(range(1, 25)),
        "last_room_label": format_room(room_count()),
        "first_day": first_bookable(now) or season_start(),
        "season_end": season_end(),
        "max_days": MAP_MAX_DAYS,
        "zone": zone_name(),
        "bmap": None,
        "refresh_seconds": settings.STRONGROOM_POLL_SECONDS,
    }
    if bmap is None:
        return context
    words = _Words(bmap, query)
    tiles = [_tile(words, state) for state in bmap.rooms]
    shown = [t for t in tiles if t.state in ("free", "partly")] if query.only_free else tiles
    opened = bmap.grid_room
    grid_rows = [_grid_row(bmap, opened, row) for row in bmap.grid] if opened else []
    context.update(
        bmap=bmap,
        token=map_token(bmap),
        tiles=tiles,
        counts=_counts(bmap),
        groups=_groups(shown),
        shown_count=len(shown),
        hours_text=hour_range(*bmap.hours),
        dates_text=listed(formats.date_format(d, "DATE_FORMAT") for d in bmap.dates),
        grid_rows=pieces("booking/_map_box_row.html", "row", grid_rows) if grid_rows else "",
        grid_hours=[f"{h:02d}:00" for h in range(*bmap.hours)],
        grid_room_label=format_room(bmap.grid_room) if bmap.grid_room else "",
        grid_close="?" + query.query(room=None),
    )
    return context
