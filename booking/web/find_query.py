"""The building map's query, read leniently from the URL: every bad value is named and left out,
the rest is kept (class, days, hours, the rooms shown, the class C room whose grid is open)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.utils import formats
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from booking.domain.parser import room_pick
from booking.domain.refusals import shown_value
from booking.domain.rules import (
    in_season,
    room_count,
    season_end,
    season_start,
    site_today,
)
from booking.domain.values import whole_number
from booking.slots.building_map import (
    MAP_MAX_DAYS,
)
from booking.web import forms


@dataclass(frozen=True)
class MapQuery:
    """The map's choice. `rooms` is the range shown (first, last); `grid_room` the class C room
    whose box grid is open."""

    cls: str = ""
    dates: tuple[dt.date, ...] = ()
    start: int | None = None
    end: int | None = None
    first_room: int = 1
    last_room: int = 0  # 0: the last room of the building
    only_free: bool = False
    grid_room: int | None = None
    problems: tuple[Any, ...] = field(default=(), compare=False)

    @property
    def hours(self) -> tuple[int, int] | None:
        if self.cls == "A" or self.start is None or self.end is None or self.end <= self.start:
            return None
        return (self.start, self.end)

    @property
    def rooms(self) -> range:
        return range(self.first_room, (self.last_room or room_count()) + 1)

    @property
    def ready(self) -> bool:
        return bool(self.cls and self.dates)

    def params(self, **changes: Any) -> list[tuple[str, str]]:
        """The query as URL parameters (`changes` applied)."""
        values = {
            "cls": self.cls,
            "dates": self.dates,
            "start": self.start,
            "end": self.end,
            "first": self.first_room,
            "last": self.last_room,
            "free": self.only_free,
            "room": self.grid_room,
        } | changes
        pairs: list[tuple[str, str]] = [("cls", values["cls"])] if values["cls"] else []
        pairs += [("date", d.isoformat()) for d in values["dates"]]
        if values["cls"] in ("B", "C") and values["start"] is not None:
            pairs.append(("start", str(values["start"])))
        if values["cls"] in ("B", "C") and values["end"] is not None:
            pairs.append(("end", str(values["end"])))
        if values["first"] != 1:
            pairs.append(("from", str(values["first"])))
        if values["last"]:
            pairs.append(("to", str(values["last"])))
        if values["free"]:
            pairs.append(("free", "1"))
        if values["room"] is not None:
            pairs.append(("room", str(values["room"])))
        return pairs

    def query(self, **changes: Any) -> str:
        return urlencode(self.params(**changes))


def _one(data: Mapping[str, Any], name: str) -> str:
    return forms.query_one(data, name)[: forms.MAX_FIELD + 1]


def _room_number(data: Mapping[str, Any], name: str, problems: list[Any]) -> int | None:
    room, refused = room_pick(_one(data, name))
    problems.extend(refused)
    return room


def first_bookable(now: dt.datetime | None = None) -> dt.date | None:
    """Tomorrow, or the season's first day if later; None once the season is over."""
    day = max(site_today(now) + dt.timedelta(days=1), season_start())
    return day if in_season(day) else None


def _half_range(cls: str, start: int | None, end: int | None, data: Mapping[str, Any]) -> list[Any]:
    """The word on an hour range given by one end only (the map then shows the whole day)."""
    if cls not in ("B", "C") or (start is None) == (end is None):
        return []
    if start is not None and not _one(data, "end"):  # (a reversed range has its own word)
        return [
            _("From %(hour)s without an end hour: the whole day is shown. Choose “To” as well.")
            % {"hour": f"{start:02d}:00"}
        ]
    if end is not None:
        return [
            _("To %(hour)s without a start hour: the whole day is shown. Choose “From” as well.")
            % {"hour": f"{end:02d}:00"}
        ]
    return []


DEFAULT_CLASS = "A"  # what an empty map form starts with (with the first bookable day)


def map_query_from(data: Mapping[str, Any], *, now: dt.datetime | None = None) -> MapQuery:
    """The map's query from a GET: class, days (`date`, repeated, or `date` + `days`), hours,
    room range, "only free", the open room. Unusable values are named in `problems`."""
    choices, found = forms.choices_from(data, now=now)
    problems: list[Any] = list(found)
    cls = choices.cls or ("" if forms.query_values(data, "cls") else DEFAULT_CLASS)
    dates = list(choices.dates)
    days_text = _one(data, "days")
    if days_text:
        count = whole_number(days_text) or 0
        if not 1 <= count <= MAP_MAX_DAYS:
            problems.append(
                _("Show 1 to %(most)s days at once, not “%(value)s”.")
                % {"most": MAP_MAX_DAYS, "value": shown_value(days_text)}
            )
        elif dates:
            following = [dates[0] + dt.timedelta(days=i) for i in range(count)]
            kept = [d for d in following if in_season(d)]
            dates = sorted({*dates, *kept})
            if len(kept) < count:
                problems.append(
                    ngettext(
                        "The season ends on %(end)s: %(kept)s day of the %(count)s asked is shown.",
                        "The season ends on %(end)s: %(kept)s days of the %(count)s asked "
                        "are shown.",
                        len(kept),
                    )
                    % {
                        "end": formats.date_format(season_end(), "DATE_FORMAT"),
                        "kept": len(kept),
                        "count": count,
                    }
                )
    if len(dates) > MAP_MAX_DAYS:
        problems.append(
            _("Show 1 to %(most)s days at once: the first %(most)s are shown.")
            % {"most": MAP_MAX_DAYS}
        )
        dates = dates[:MAP_MAX_DAYS]
    if cls and not dates and not forms.query_values(data, "date"):
        first = first_bookable(now)
        dates = [first] if first else []
        if first is None:
            problems.append(_("The season is over: nothing can be booked any more."))
    problems.extend(_half_range(cls, choices.start, choices.end, data))
    first_room = _room_number(data, "from", problems) or 1
    last_room = _room_number(data, "to", problems) or 0
    if last_room and last_room < first_room:  # typed the other way round: read as meant
        first_room, last_room = last_room, first_room
        problems.append(
            _("The room range ended before it began: rooms %(first)s to %(last)s are shown.")
            % {"first": first_room, "last": last_room}
        )
    return MapQuery(
        cls=cls,
        dates=tuple(dates),
        start=choices.start,
        end=choices.end,
        first_room=first_room,
        last_room=last_room,
        only_free=_one(data, "free") in ("1", "on", "yes"),
        grid_room=choices.room if cls == "C" else None,
        problems=tuple(problems),
    )
