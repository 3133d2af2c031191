"""The booking page's choices: read leniently from a query (a half-made choice is normal while
picking) by the booking parser's lenient mode, changed by the page's buttons, written back as a
shareable URL query."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, QueryDict
from django.utils.translation import gettext_lazy as _

from booking.domain.parser import (
    InvalidRequest,
    SlotChoice,
    SlotRequest,
    slot_choice_parse,
    slot_request_parse,
)
from booking.domain.rules import MAX_DATES, in_season, season_months
from booking.domain.values import box_number, date_value, picked_hour

MAX_FIELD = 40  # longer values are refused before they are parsed
_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")
_ONE = ("cls", "room", "start", "end", "month")  # fields read once (the last value given)
_MANY = ("date", "box")  # fields given any number of times


@dataclass(frozen=True)
class Choices(SlotChoice):
    """The picked slot plus the month the calendar shows."""

    month: dt.date | None = None

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
        """The URL query of these choices (with `changes` applied), '' when nothing is picked.
        Without changes it is made once (a page names its own URL several times)."""
        if changes:
            return urlencode(replace(self, **changes).params())
        made = self.__dict__.get("_query")
        if made is None:
            made = urlencode(self.params())
            object.__setattr__(self, "_query", made)  # frozen: fields only; this is derived
        return made


def query_values(data: Mapping[str, Any], name: str) -> list[str]:
    """Every text value of `name` in a query or form (a plain mapping: its one value)."""
    if isinstance(data, QueryDict):
        return [v for v in data.getlist(name) if isinstance(v, str)]
    value = data.get(name)
    return [value] if isinstance(value, str) else []


def query_one(data: Mapping[str, Any], name: str) -> str:
    """The last value of `name`, spaces around it dropped ('' when there is none)."""
    values = query_values(data, name)
    return values[-1].strip(" ") if values else ""


def _month(text: str) -> dt.date | None:
    match = _MONTH.fullmatch(text)
    if match is None:
        return None
    try:
        return dt.date(int(match.group(1)), int(match.group(2)), 1)
    except ValueError:
        return None


def _long_fields(data: Mapping[str, Any]) -> list[str]:
    """The fields of which some value is longer than MAX_FIELD (refused unread)."""
    return [n for n in (*_ONE, *_MANY) if any(len(v) > MAX_FIELD for v in query_values(data, n))]


def choices_from(
    data: Mapping[str, Any], *, now: dt.datetime | None = None
) -> tuple[Choices, list[Any]]:
    """Read the choices from a query or form; every value that cannot be used is dropped with
    a message naming it (the page then shows the rest)."""
    one = {name: query_one(data, name) for name in _ONE}
    many = {name: query_values(data, name) for name in _MANY}
    long = _long_fields(data)
    for name in long:
        one[name], many[name] = "", []
    picked, problems = slot_choice_parse(
        cls=one["cls"],
        room=one["room"],
        dates=many["date"],
        hour_start=one["start"],
        hour_end=one["end"],
        boxes=many["box"],
        now=now,
    )
    if long:
        problems.insert(0, _("Some values were far too long and were ignored."))
    month = _month(one["month"])
    problems = list(dict.fromkeys(problems))  # a value sent three times is one message
    return Choices(**vars(picked), month=month if month in season_months(now) else None), problems


def month_refused(data: Mapping[str, Any]) -> list[Any]:
    """The booking page's word on a month asked for that the calendar has not (outside the
    season, or not a month): [] when none was asked for or it has it."""
    text = query_one(data, "month")
    if not text or _month(text) in season_months():
        return []
    return [_("The calendar has no such month: it shows a month of the season.")]


def query_choices(request: HttpRequest) -> tuple[Choices, list[Any]]:
    """`choices_from(request.GET)`, read once per request: the plan of a view's reads ahead
    (strongroom/ahead.py) and the view itself both ask for it."""
    read: tuple[Choices, list[Any]] | None = getattr(request, "_strongroom_choices", None)
    if read is None:
        read = choices_from(request.GET)
        request._strongroom_choices = read  # type: ignore[attr-defined]
    return read[0], list(read[1])


def posted_request(
    data: Mapping[str, Any], *, now: dt.datetime | None = None
) -> tuple[Choices, SlotRequest | None, list[Any]]:
    """A form that takes slots (hold, book, wait), read strictly, once: the request and the
    choices it makes, or (refused) None with a message for every problem and the choices the
    pickers' lenient reading keeps, to show again. Nothing sent is dropped quietly, as the
    pickers' reading does: hours or boxes a class has not, a second class or room, a date or
    box past the most a request takes all refuse the form."""
    fields = {name: query_values(data, name) for name in (*_ONE, *_MANY)}  # each field once
    if any(len(v) > MAX_FIELD for values in fields.values() for v in values):
        choices, problems = choices_from(data, now=now)
        return choices, None, problems  # choices_from's "far too long" message
    if any(len(fields[name]) > 1 for name in ("cls", "room", "start", "end")):
        message = _("The form sent a class, room or hour twice: choose again on the booking page.")
        return choices_from(data, now=now)[0], None, [message]
    one = {name: fields[name][-1].strip(" ") if fields[name] else "" for name in _ONE}
    try:
        request = slot_request_parse(
            cls=one["cls"],
            room=one["room"],
            dates=fields["date"],
            hour_start=one["start"],
            hour_end=one["end"],
            boxes=fields["box"],
            now=now,
        )
    except InvalidRequest as refused:
        return choices_from(data, now=now)[0], None, list(refused.errors)
    return choices_of(request, month=_month(one["month"])), request, []


def choices_of(request: SlotRequest, *, month: dt.date | None = None) -> Choices:
    """The pickers' choices that make `request` (to show it, or the page again)."""
    start, end = request.hours or (None, None)
    return Choices(
        cls=request.cls,
        room=request.room,
        dates=request.dates,
        start=start,
        end=end,
        boxes=request.boxes,
        month=month,
    )


def choices_changed(choices: Choices, data: Mapping[str, Any]) -> Choices | None:
    """Apply the button the buyer pressed (a day, an hour, a box, a month), or None if none was.

    Hours: a first press picks one hour, a second press makes the range from one to the other,
    whichever is pressed first (after one picked hour, or after the first hour chosen in the
    From list with no last one); a press on a longer range starts again. Days and boxes
    toggle."""
    toggle = date_value(query_one(data, "toggle"))
    if toggle is not None and in_season(toggle):
        dates = set(choices.dates) ^ {toggle}
        month = toggle.replace(day=1)
        return replace(choices, dates=tuple(sorted(dates))[:MAX_DATES], month=month)
    hour = picked_hour(query_one(data, "hour"), is_end=False)
    if hour is not None and choices.cls in ("B", "C"):
        single = choices.hours is not None and choices.hours[1] - choices.hours[0] == 1
        open_ended = choices.end is None  # a From chosen in the list, no To yet
        if (single or open_ended) and choices.start is not None:
            if hour >= choices.start:
                return replace(choices, end=hour + 1)
            return replace(choices, start=hour, end=choices.start + 1)  # pressed 15, then 13
        return replace(choices, start=hour, end=hour + 1)
    box = box_number(query_one(data, "pick_box"))
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
