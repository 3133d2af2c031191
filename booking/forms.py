"""The booking page's choices: read leniently from a query (a half-made choice is normal while
picking), changed by the page's buttons, written back as a shareable URL query."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict
from django.utils.translation import gettext_lazy as _

from booking.parser import InvalidRequest, SlotRequest, check_dates, shown_value, slot_request_parse
from booking.rules import (
    BOXES_PER_ROOM,
    CLASSES,
    HOURS_PER_DAY,
    MAX_DATES,
    format_room,
    in_season,
    room_count,
)

MAX_FIELD = 40  # longer values are refused before they are parsed
_NUMBER = re.compile(r"[0-9]{1,4}")
_HOUR = re.compile(r"([0-9]{1,2})(?::00)?")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")


@dataclass(frozen=True)
class Choices:
    """What the buyer has picked so far; any part may still be missing."""

    cls: str = ""
    room: int | None = None
    dates: tuple[dt.date, ...] = ()
    start: int | None = None
    end: int | None = None
    boxes: tuple[int, ...] = ()
    month: dt.date | None = None

    @property
    def room_label(self) -> str:
        return format_room(self.room) if self.room else ""

    @property
    def hours(self) -> tuple[int, int] | None:
        if self.start is None or self.end is None or self.end <= self.start:
            return None
        return (self.start, self.end)

    @property
    def complete(self) -> bool:
        """Every part the class needs has been picked (the rules may still refuse it)."""
        if not self.cls or self.room is None or not self.dates:
            return False
        if self.cls == "A":
            return True
        if self.hours is None:
            return False
        return self.cls == "B" or bool(self.boxes)

    def params(self, *, with_month: bool = True) -> list[tuple[str, str]]:
        """The choices as query parameters, in the pickers' order."""
        pairs: list[tuple[str, str]] = []
        if self.cls:
            pairs.append(("cls", self.cls))
        if self.room is not None:
            pairs.append(("room", str(self.room)))
        pairs += [("box", str(b)) for b in self.boxes]
        if self.start is not None:
            pairs.append(("start", str(self.start)))
        if self.end is not None:
            pairs.append(("end", str(self.end)))
        pairs += [("date", d.isoformat()) for d in self.dates]
        if with_month and self.month is not None:
            pairs.append(("month", self.month.strftime("%Y-%m")))
        return pairs

    def query(self, **changes: Any) -> str:
        """The URL query of these choices (with `changes` applied), '' when nothing is picked."""
        return urlencode((replace(self, **changes) if changes else self).params())

    def slot_request(self, now: dt.datetime | None = None) -> SlotRequest:
        """The engine's validated request (raises InvalidRequest naming every problem)."""
        return slot_request_parse(
            cls=self.cls,
            room=self.room if self.room is not None else "",
            dates=list(self.dates),
            hour_start=self.start if self.cls != "A" else None,
            hour_end=self.end if self.cls != "A" else None,
            boxes=list(self.boxes) if self.cls == "C" else None,
            now=now,
        )


def _values(data: Mapping[str, Any], name: str) -> list[str]:
    if isinstance(data, QueryDict):
        return [v for v in data.getlist(name) if isinstance(v, str)]
    value = data.get(name)
    return [value] if isinstance(value, str) else []


def _one(data: Mapping[str, Any], name: str) -> str:
    values = _values(data, name)
    return values[-1].strip(" ") if values else ""


def _hour(text: str, *, is_end: bool) -> int | None:
    match = _HOUR.fullmatch(text)
    if match is None:
        return None
    hour = int(match.group(1))
    low, high = (1, HOURS_PER_DAY) if is_end else (0, HOURS_PER_DAY - 1)
    return hour if low <= hour <= high else None


def _number(text: str, low: int, high: int) -> int | None:
    if not _NUMBER.fullmatch(text):
        return None
    value = int(text)
    return value if low <= value <= high else None


def _date(text: str) -> dt.date | None:
    if not _DATE.fullmatch(text):
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None


def _month(text: str) -> dt.date | None:
    match = _MONTH.fullmatch(text)
    if match is None:
        return None
    try:
        return dt.date(int(match.group(1)), int(match.group(2)), 1)
    except ValueError:
        return None


def choices_from(
    data: Mapping[str, Any], *, now: dt.datetime | None = None
) -> tuple[Choices, list[Any]]:
    """Read the choices from a query or form; every value that cannot be used is dropped with
    a message naming it (the page then shows the rest)."""
    problems: list[Any] = []
    long = [n for n in ("cls", "room", "start", "end", "month") if len(_one(data, n)) > MAX_FIELD]
    for name in ("date", "box"):
        if any(len(v) > MAX_FIELD for v in _values(data, name)):
            long.append(name)
    if long:
        problems.append(_("Some values were far too long and were ignored."))

    cls = _one(data, "cls").upper() if "cls" not in long else ""
    if cls and cls not in CLASSES:
        problems.append(
            _("There is no class “%(value)s”: choose A, B or C.") % {"value": shown_value(cls)}
        )
        cls = ""

    room_text = _one(data, "room") if "room" not in long else ""
    room = _number(room_text, 1, room_count()) if room_text else None
    if room_text and room is None:
        problems.append(
            _("There is no room “%(value)s”: rooms are 001 to %(last)s.")
            % {"value": shown_value(room_text), "last": format_room(room_count())}
        )

    start = end = None
    if cls in ("B", "C"):
        start_text, end_text = _one(data, "start"), _one(data, "end")
        start = _hour(start_text, is_end=False) if start_text and "start" not in long else None
        end = _hour(end_text, is_end=True) if end_text and "end" not in long else None
        if (start_text and start is None) or (end_text and end is None):
            problems.append(_("Hours run from 00:00 to 24:00, on the hour."))
        if start is not None and end is not None and end <= start:
            problems.append(_("The hour range must end after it starts."))
            end = None

    boxes: list[int] = []
    if cls == "C" and "box" not in long:
        raw = _values(data, "box")[:BOXES_PER_ROOM]
        for text in raw:
            box = _number(text.strip(" "), 1, BOXES_PER_ROOM)
            if box is None:
                problems.append(
                    _("There is no box “%(value)s”: boxes are 1 to 100.")
                    % {"value": shown_value(text)}
                )
            elif box not in boxes:
                boxes.append(box)

    dates: list[dt.date] = []
    if "date" not in long:
        for text in _values(data, "date")[:MAX_DATES]:
            day = _date(text.strip(" "))
            if day is None:
                problems.append(
                    _("“%(value)s” is not a date (use YYYY-MM-DD).") % {"value": shown_value(text)}
                )
            elif day not in dates:
                dates.append(day)
    refused = check_dates(dates, now)
    if refused:
        problems.extend(refused)
        dates = [d for d in dates if not check_dates([d], now)]

    month = _month(_one(data, "month")) if "month" not in long else None
    choices = Choices(
        cls=cls,
        room=room,
        dates=tuple(sorted(dates)),
        start=start,
        end=end,
        boxes=tuple(sorted(boxes)),
        month=month,
    )
    return choices, problems


def choices_changed(choices: Choices, data: Mapping[str, Any]) -> Choices | None:
    """Apply the button the buyer pressed (a day, an hour, a box, a month), or None if none was.

    Hours: a first press picks one hour, a later hour extends the range to it, any other press
    starts again. Days and boxes toggle."""
    toggle = _date(_one(data, "toggle"))
    if toggle is not None and in_season(toggle):
        dates = set(choices.dates) ^ {toggle}
        month = toggle.replace(day=1)
        return replace(choices, dates=tuple(sorted(dates))[:MAX_DATES], month=month)
    hour = _hour(_one(data, "hour"), is_end=False) if _one(data, "hour") else None
    if hour is not None and choices.cls in ("B", "C"):
        single = choices.hours is not None and choices.hours[1] - choices.hours[0] == 1
        if single and choices.start is not None and hour > choices.start:
            return replace(choices, end=hour + 1)
        return replace(choices, start=hour, end=hour + 1)
    box = _number(_one(data, "pick_box"), 1, BOXES_PER_ROOM)
    if box is not None and choices.cls == "C":
        return replace(choices, boxes=tuple(sorted(set(choices.boxes) ^ {box})))
    return None


def request_errors(choices: Choices, now: dt.datetime | None = None) -> list[Any]:
    """The engine's messages for a complete choice ([] when it can be booked as asked)."""
    try:
        choices.slot_request(now)
    except InvalidRequest as refused:
        return refused.errors
    return []
