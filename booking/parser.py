"""The one parser of booking input: raw values become a `SlotRequest` or `InvalidRequest`
with one translated message per problem, so views never write anything on refusal. Dates are
checked against the season and the day-ahead rule here only (`check_dates`)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.functional import lazy
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from booking.rules import (
    BOXES_PER_ROOM,
    CLASSES,
    HOURS_PER_DAY,
    MAX_DATES,
    day_refusal,
    format_room,
    room_count,
    season_day,
    season_end,
    season_start,
    site_today,
)

_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_HOUR_RE = re.compile(r"([0-9]{1,2})(?::([0-9]{2}))?")
_NUMBER_RE = re.compile(r"[0-9]{1,4}")
_SHOWN = 24  # at most this many characters of a bad value are echoed in a message


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
        """The dates as day numbers of the season (0 = the season's first day)."""
        return tuple(season_day(d) for d in self.dates)


def _interpolate(message: str, params: dict[str, Any]) -> str:
    return gettext(message) % params


_interpolate_lazy = lazy(_interpolate, str)


def _msg(message: str, **params: Any) -> Any:
    """A message translated when shown (not when made), with its values filled in."""
    return _interpolate_lazy(message, params)


def shown_value(value: object) -> str:
    """A bad value as echoed in a message: its first characters only."""
    text = str(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip(" "))


def _parse_class(cls: object, errors: list[Any]) -> str | None:
    text = cls.strip(" ").upper() if isinstance(cls, str) else None
    if text in CLASSES:
        return text
    errors.append(_msg("Choose a class: A, B or C (not “%(value)s”).", value=shown_value(cls)))
    return None


def _parse_room(room: object, errors: list[Any]) -> int | None:
    count = room_count()
    number: int | None = None
    if isinstance(room, int) and not isinstance(room, bool):
        number = room
    elif isinstance(room, str) and _NUMBER_RE.fullmatch(room.strip(" ")):
        number = int(room.strip(" "))
    if number is None:
        errors.append(
            _msg(
                "The room must be a number from 001 to %(last)s (not “%(value)s”).",
                last=format_room(count),
                value=shown_value(room),
            )
        )
        return None
    if not 1 <= number <= count:
        errors.append(
            _msg(
                "Room %(room)s does not exist: rooms are 001 to %(last)s.",
                room=number,
                last=format_room(count),
            )
        )
        return None
    return number


def _as_list(value: object) -> list[object]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part for part in value.split(",") if part.strip(" ")]
    if isinstance(value, Iterable):
        return list(value)
    return [value]


def _parse_date(value: object, errors: list[Any]) -> dt.date | None:
    if isinstance(value, dt.datetime):
        value = value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str) and _DATE_RE.fullmatch(value.strip(" ")):
        try:
            return dt.date.fromisoformat(value.strip(" "))
        except ValueError:
            pass
    errors.append(_msg("“%(value)s” is not a date (use YYYY-MM-DD).", value=shown_value(value)))
    return None


def check_dates(dates: Iterable[dt.date], now: dt.datetime | None = None) -> list[Any]:
    """The season and one-day-ahead rules for each date; [] when every date is bookable."""
    errors: list[Any] = []
    today = site_today(now)
    for date in dates:
        reason = day_refusal(date, today)
        if reason == "outside_season":
            errors.append(
                _msg(
                    "%(date)s is outside the season (%(start)s to %(end)s).",
                    date=date.isoformat(),
                    start=season_start(),
                    end=season_end(),
                )
            )
        elif reason == "past":
            errors.append(_msg("%(date)s is in the past.", date=date.isoformat()))
        elif reason == "today":
            errors.append(
                _msg("%(date)s is today: book at least one day ahead.", date=date.isoformat())
            )
    return errors


def _parse_dates(dates: object, now: dt.datetime | None, errors: list[Any]) -> tuple[dt.date, ...]:
    raw = _as_list(dates)
    if not raw:
        errors.append(_("Choose at least one date."))
        return ()
    if len(raw) > MAX_DATES:
        errors.append(_msg("At most %(count)s dates per booking.", count=MAX_DATES))
        return ()
    parsed = [d for d in (_parse_date(v, errors) for v in raw) if d is not None]
    unique = tuple(sorted(set(parsed)))
    errors.extend(check_dates(unique, now))
    return unique


def _parse_hour(value: object, *, is_end: bool, errors: list[Any]) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        hour, minutes = value, 0
    elif isinstance(value, str) and (match := _HOUR_RE.fullmatch(value.strip(" "))):
        hour, minutes = int(match.group(1)), int(match.group(2) or 0)
    else:
        errors.append(
            _msg("“%(value)s” is not an hour (use 00:00 to 24:00).", value=shown_value(value))
        )
        return None
    if not 0 <= hour <= HOURS_PER_DAY or minutes >= 60:
        errors.append(
            _msg("%(value)s is not an hour of the day (00:00 to 24:00).", value=shown_value(value))
        )
        return None
    if minutes:
        errors.append(
            _msg(
                "Hours start on the hour (%(hour)02d:00, not %(value)s).",
                hour=hour,
                value=shown_value(value),
            )
        )
        return None
    if hour == HOURS_PER_DAY and minutes == 0 and not is_end:
        errors.append(_("A booking cannot start at 24:00; the last hour starts at 23:00."))
        return None
    return hour


def _parse_hours(cls: str, start: object, end: object, errors: list[Any]) -> tuple[int, int] | None:
    if cls == "A":
        if not (_blank(start) and _blank(end)):
            errors.append(_("Class A is booked by the day: leave the hours empty."))
        return None
    if _blank(start) or _blank(end):
        errors.append(_msg("Class %(cls)s needs an hour range (from, to).", cls=cls))
        return None
    first = _parse_hour(start, is_end=False, errors=errors)
    last = _parse_hour(end, is_end=True, errors=errors)
    if first is None or last is None:
        return None
    if last == first:
        errors.append(
            _msg(
                "The hour range %(start)02d:00 to %(end)02d:00 is empty: the end must be later.",
                start=first,
                end=last,
            )
        )
        return None
    if last < first:
        errors.append(
            _msg(
                "The hour range %(start)02d:00 to %(end)02d:00 ends before it starts.",
                start=first,
                end=last,
            )
        )
        return None
    return first, last


def _parse_boxes(cls: str, boxes: object, errors: list[Any]) -> tuple[int, ...]:
    raw = _as_list(boxes)
    if cls != "C":
        if raw:
            errors.append(_msg("Class %(cls)s has no boxes: boxes are for class C only.", cls=cls))
        return ()
    if not raw:
        errors.append(_("Choose at least one box (1 to 100)."))
        return ()
    if len(raw) > BOXES_PER_ROOM:
        errors.append(_("At most 100 boxes per booking."))
        return ()
    parsed: set[int] = set()
    for value in raw:
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and _NUMBER_RE.fullmatch(value.strip(" ")):
            number = int(value.strip(" "))
        if number is None:
            errors.append(
                _msg("“%(value)s” is not a box number (1 to 100).", value=shown_value(value))
            )
        elif not 1 <= number <= BOXES_PER_ROOM:
            errors.append(_msg("Box %(box)s does not exist: boxes are 1 to 100.", box=number))
        else:
            parsed.add(number)
    return tuple(sorted(parsed))


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
    """Validate raw values into a SlotRequest; raise InvalidRequest naming every problem."""
    errors: list[Any] = []
    parsed_cls = _parse_class(cls, errors)
    parsed_room = _parse_room(room, errors)
    parsed_dates = _parse_dates(dates, now, errors)
    hours: tuple[int, int] | None = None
    parsed_boxes: tuple[int, ...] = ()
    if parsed_cls is not None:
        hours = _parse_hours(parsed_cls, hour_start, hour_end, errors)
        parsed_boxes = _parse_boxes(parsed_cls, boxes, errors)
    if errors or parsed_cls is None or parsed_room is None:
        raise InvalidRequest(errors)
    return SlotRequest(parsed_cls, parsed_room, parsed_dates, hours, parsed_boxes)
