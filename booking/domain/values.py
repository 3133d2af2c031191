"""One booking value at a time, read the same way by the parser's strict and lenient modes
(and by the pages that take a room or a number from a form or the URL: the kiosk, the staff
desk): None when it cannot be used. Numbers are the digits 0-9 only (`strongroom.typed`)."""

import datetime as dt
import re

from booking.domain.rules import (
    BOXES_PER_ROOM,
    HOURS_PER_DAY,
    room_count,
)
from strongroom.typed import is_number

_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_HOUR_RE = re.compile(r"([0-9]{1,2})(?::([0-9]{2}))?")
_NUMBER_MAX = 4  # digits of the largest number a booking value takes (room 0300, box 100)


def whole_number(value: object) -> int | None:
    """An int, or text of one to four digits 0-9 (spaces around allowed; the site's one rule for
    a number, `strongroom.typed.is_number`); None otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = value.strip(" ") if isinstance(value, str) else ""
    if is_number(text) and not text.startswith("-") and len(text) <= _NUMBER_MAX:
        return int(text)
    return None


def room_number(value: object) -> int | None:
    """The number of an existing room (7, "7", "007"), or None."""
    number = whole_number(value)
    return number if number is not None and 1 <= number <= room_count() else None


def box_number(value: object) -> int | None:
    """The number of an existing box (1 to 100), or None."""
    number = whole_number(value)
    return number if number is not None and 1 <= number <= BOXES_PER_ROOM else None


def date_value(value: object) -> dt.date | None:
    """A date, or text YYYY-MM-DD naming a real day; None otherwise."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str) and _DATE_RE.fullmatch(value.strip(" ")):
        try:
            return dt.date.fromisoformat(value.strip(" "))
        except ValueError:
            pass
    return None


def hour_parts(value: object) -> tuple[int, int] | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value, 0
    if isinstance(value, str) and (match := _HOUR_RE.fullmatch(value.strip(" "))):
        return int(match.group(1)), int(match.group(2) or 0)
    return None


def picked_hour(value: object, *, is_end: bool) -> int | None:
    """An hour on the hour a range can start at (0 to 23) or end at (1 to 24); None otherwise."""
    parts = hour_parts(value)
    if parts is None or parts[1]:
        return None
    low, high = (1, HOURS_PER_DAY) if is_end else (0, HOURS_PER_DAY - 1)
    return parts[0] if low <= parts[0] <= high else None
