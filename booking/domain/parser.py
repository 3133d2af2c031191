"""The one parser of booking input, in two modes. Strict (`slot_request_parse`): raw values
become a `SlotRequest` or `InvalidRequest` with one translated message per problem, so views
never write anything on refusal. Lenient (`slot_choice_parse`, for the pickers): a half-made
choice is normal, so what cannot be used is dropped with a message and the rest is kept.
Both read each value the same way; dates are checked against the season and the day-ahead rule
here only (`check_dates`), and a room number only through `booking.domain.values.room_number`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from booking.domain.refusals import LONGEST_VALUE, refusal, room_refusal, shown_value
from booking.domain.rules import (
    BOXES_PER_ROOM,
    CLASSES,
    HOURS_PER_DAY,
    MAX_DATES,
    calendar_day,
    day_refusal,
    format_room,
    room_count,
    season_end,
    season_start,
    site_today,
)
from booking.domain.values import (
    box_number,
    date_value,
    hour_parts,
    picked_hour,
    room_number,
    whole_number,
)


class InvalidRequest(Exception):
    """A request the rules refuse; `errors` are translated messages naming each problem."""

    def __init__(self, errors: Sequence[Any]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = list(errors)


@dataclass(frozen=True)
class SlotRequest:
    """A validated request: class, room, dates, [start, end) hours (B/C), boxes (C)."""

    cls: str
    room: int
    dates: tuple[dt.date, ...]
    hours: tuple[int, int] | None = None
    boxes: tuple[int, ...] = ()

    @property
    def days(self) -> tuple[int, ...]:
        """The dates as calendar day numbers (`calendar_day`): how the store names them."""
        return tuple(calendar_day(d) for d in self.dates)

    @property
    def slot_count(self) -> int:
        """How many slots the request takes: days x hours (B/C) x boxes (C)."""
        start, end = self.hours or (0, 1)
        return len(self.dates) * (end - start) * max(1, len(self.boxes))


def check_size(request: SlotRequest) -> list[Any]:
    """The cap on the slots one hold or one booking may take (STRONGROOM_MAX_SLOTS)."""
    cap = settings.STRONGROOM_MAX_SLOTS
    if request.slot_count <= cap:
        return []
    return [
        refusal(
            "too_many_slots",
            count=f"{request.slot_count:,}",
            cap=f"{cap:,}",
        )
    ]


@dataclass(frozen=True)
class SlotChoice:
    """What the buyer has picked so far (the lenient reading); any part may still be missing."""

    cls: str = ""
    room: int | None = None
    dates: tuple[dt.date, ...] = ()
    start: int | None = None
    end: int | None = None
    boxes: tuple[int, ...] = ()

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
        return self.cls == "A" or (self.hours is not None and (self.cls == "B" or bool(self.boxes)))

    def slot_request(self, now: dt.datetime | None = None) -> SlotRequest:
        """The strict reading of this choice (raises InvalidRequest naming every problem)."""
        return slot_request_parse(
            cls=self.cls,
            room=self.room if self.room is not None else "",
            dates=list(self.dates),
            hour_start=self.start if self.cls != "A" else None,
            hour_end=self.end if self.cls != "A" else None,
            boxes=list(self.boxes) if self.cls == "C" else None,
            now=now,
        )


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip(" "))


def _as_list(value: object) -> list[object]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part for part in value.split(",") if part.strip(" ")]
    if isinstance(value, Iterable):
        return list(value)
    return [value]


def check_dates(dates: Iterable[dt.date], now: dt.datetime | None = None) -> list[Any]:
    """The season and one-day-ahead rules for each date; [] when every date is bookable."""
    today, bounds = site_today(now), {"start": season_start(now), "end": season_end(now)}
    reasons = ((date, day_refusal(date, today)) for date in dates)
    # The rules' reasons (outside_season, past, today) are the messages' keys.
    return [refusal(reason, date=date, **bounds) for date, reason in reasons if reason]


# --- one request: strict refuses what lenient drops ----------------------------------------


class _Reading:
    """One reading of raw booking input, collecting a message per problem."""

    def __init__(self, *, lenient: bool, now: dt.datetime | None) -> None:
        self.lenient, self.now = lenient, now
        self.errors: list[Any] = []

    def refuse(self, key: str, **params: Any) -> None:
        self.errors.append(refusal(key, **params))

    def cls(self, value: object) -> str | None:
        text = value.strip(" ").upper() if isinstance(value, str) else None
        if text in CLASSES:
            return text
        if not self.lenient:
            if text:
                self.refuse("no_class", value=shown_value(value))
            else:
                self.refuse("class_blank")
        elif text:
            self.refuse("unknown_class", value=shown_value(text))
        return None

    def room(self, value: object) -> int | None:
        number, last = room_number(value), format_room(room_count())
        if number is not None:
            return number
        if self.lenient:
            if not _blank(value) and whole_number(value) is None:
                self.errors.append(room_refusal(value))  # as the strict reading says it
            elif not _blank(value):
                self.refuse("unknown_room", value=shown_value(value), last=last)
        elif _blank(value):
            self.refuse("room_blank", last=last)
        elif (given := whole_number(value)) is None:
            self.errors.append(room_refusal(value))
        else:
            self.refuse("room_missing", room=given, last=last)
        return None

    def _listed(self, values: object, most: int, none: str, many: str) -> list[object]:
        """A list field's values: lenient keeps the first `most`; strict refuses none or more."""
        raw = _as_list(values)
        if self.lenient:
            return raw[:most]
        if not raw or len(raw) > most:
            self.refuse(none if not raw else many, count=most)
            return []
        return raw

    def dates(self, values: object) -> tuple[dt.date, ...]:
        raw = self._listed(values, MAX_DATES, "no_date", "many_dates")
        read: list[dt.date] = []
        for value in raw:
            date = date_value(value)
            if date is None:
                self.refuse("not_date", value=shown_value(value))
            elif date not in read:
                read.append(date)
        kept: list[dt.date] = []
        for date in read if self.lenient else sorted(read):
            refused = check_dates([date], self.now)
            self.errors.extend(refused)
            if not (refused and self.lenient):
                kept.append(date)
        return tuple(sorted(kept))

    def picked_hours(self, cls: str, start: object, end: object) -> tuple[int | None, int | None]:
        """Lenient: the hours picked so far (B and C only); a bad one is dropped."""
        if cls not in ("B", "C"):
            return None, None
        first = None if _blank(start) else picked_hour(start, is_end=False)
        last = None if _blank(end) else picked_hour(end, is_end=True)
        if (first is None and not _blank(start)) or (last is None and not _blank(end)):
            self.refuse("hours_picked")
        if first is not None and last is not None and last <= first:
            self.refuse("range_picked")
            last = None
        return first, last

    def _hour(self, value: object, *, is_end: bool) -> int | None:
        parts = hour_parts(value)
        if parts is None:
            self.refuse("not_hour", value=shown_value(value))
            return None
        hour, minutes = parts
        if not 0 <= hour <= HOURS_PER_DAY or minutes >= 60:
            self.refuse("hour_of_day", value=shown_value(value))
            return None
        if minutes:
            self.refuse("on_the_hour", hour=hour, value=shown_value(value))
            return None
        if hour == HOURS_PER_DAY and not is_end:
            self.refuse("start_24")
            return None
        return hour

    def hour_range(self, cls: str, start: object, end: object) -> tuple[int, int] | None:
        """Strict: class A has no hours; B and C need a non-empty [start, end)."""
        if cls == "A":
            if not (_blank(start) and _blank(end)):
                self.refuse("a_hours")
            return None
        if _blank(start) or _blank(end):
            self.refuse("need_hours", cls=cls)
            return None
        first = self._hour(start, is_end=False)
        last = self._hour(end, is_end=True)
        if first is None or last is None:
            return None
        if last == first:
            self.refuse("range_empty", start=first, end=last)
            return None
        if last < first:
            self.refuse("range_reversed", start=first, end=last)
            return None
        return first, last

    def boxes(self, cls: str, values: object) -> tuple[int, ...]:
        raw = _as_list(values)
        if cls != "C":
            if raw and not self.lenient:
                self.refuse("no_boxes_class", cls=cls)
            return ()
        read: set[int] = set()
        for value in self._listed(raw, BOXES_PER_ROOM, "no_box", "many_boxes"):
            number = box_number(value)
            if number is not None:
                read.add(number)
            elif self.lenient:
                self.refuse("unknown_box", value=shown_value(value))
            elif (given := whole_number(value)) is None:
                self.refuse("box_not_number", value=shown_value(value))
            else:
                self.refuse("box_missing", box=given)
        return tuple(sorted(read))


def slot_request_parse(
    *,
    cls: object,
    room: object,
    dates: object,
    hour_start: object = None,
    hour_end: object = None,
    boxes: object = None,
    now: dt.datetime | None = None,
) -> SlotRequest:
    """Validate raw values into a SlotRequest; raise InvalidRequest naming every problem (a
    value longer than LONGEST_VALUE alone: nothing is read of a form that has one)."""
    values = [cls, room, hour_start, hour_end, *_as_list(dates), *_as_list(boxes)]
    long = [v for v in values if isinstance(v, str) and len(v) > LONGEST_VALUE]
    if long:
        raise InvalidRequest([refusal("too_long", value=shown_value(long[0]), count=LONGEST_VALUE)])
    reading = _Reading(lenient=False, now=now)
    parsed_cls = reading.cls(cls)
    parsed_room = reading.room(room)
    parsed_dates = reading.dates(dates)
    hours: tuple[int, int] | None = None
    parsed_boxes: tuple[int, ...] = ()
    if parsed_cls is not None:
        hours = reading.hour_range(parsed_cls, hour_start, hour_end)
        parsed_boxes = reading.boxes(parsed_cls, boxes)
    if reading.errors or parsed_cls is None or parsed_room is None:
        raise InvalidRequest(reading.errors)
    parsed = SlotRequest(parsed_cls, parsed_room, parsed_dates, hours, parsed_boxes)
    too_big = check_size(parsed)
    if too_big:
        raise InvalidRequest(too_big)
    return parsed


def room_pick(value: object) -> tuple[int | None, list[Any]]:
    """The pickers' reading of one room number: the room, or None with a message naming a bad
    value (none for a blank one)."""
    reading = _Reading(lenient=True, now=None)
    return reading.room(value), reading.errors


def slot_choice_parse(
    *,
    cls: str,
    room: str,
    dates: Sequence[str],
    hour_start: str,
    hour_end: str,
    boxes: Sequence[str],
    now: dt.datetime | None = None,
) -> tuple[SlotChoice, list[Any]]:
    """Read the pickers' values leniently: every value that cannot be used is dropped with a
    message naming it, and the rest is kept (the page then shows it)."""
    reading = _Reading(lenient=True, now=now)
    picked_cls = reading.cls(cls) or ""
    picked_room = reading.room(room)
    start, end = reading.picked_hours(picked_cls, hour_start, hour_end)
    picked_boxes = reading.boxes(picked_cls, list(boxes))
    picked_dates = reading.dates(list(dates))
    choice = SlotChoice(picked_cls, picked_room, picked_dates, start, end, picked_boxes)
    return choice, reading.errors


def request_taken_once(request: SlotRequest) -> None:
    """A request comes from the parser (read once, strictly), never built by hand."""
    if not isinstance(request, SlotRequest):
        raise TypeError("request must be a SlotRequest (use slot_request_parse)")
