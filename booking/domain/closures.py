"""A closure as staff make it (rooms, days, hours, reason) and as the store lists it: the
value, how a typed list of rooms reads, and the `{closures}:all` list read back. The writes and
the bookings inside one are booking.engine.closures."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from booking.domain.records import Booking
from booking.domain.rules import format_room, room_count
from strongroom.clock import from_ms

# [0-9], not \d: \d is any script's digits (full-width, Arabic-Indic), and int() reads them all.
_ROOMS_RE = re.compile(r"\s*([0-9]{1,3})\s*(?:-\s*([0-9]{1,3})\s*)?")


@dataclass(frozen=True)
class Closure:
    id: str
    rooms: tuple[int, ...]
    first: dt.date
    last: dt.date
    hours: tuple[int, int] | None  # None: whole days
    reason: str
    by: str = ""
    at: dt.datetime | None = None

    @property
    def whole_building(self) -> bool:
        return len(self.rooms) == room_count()

    @property
    def rooms_label(self) -> str:
        """'all', '007' or '005-010, 012'."""
        if self.whole_building:
            return "all"
        runs: list[list[int]] = []
        for room in self.rooms:
            if runs and runs[-1][-1] == room - 1:
                runs[-1].append(room)
            else:
                runs.append([room])
        return ", ".join(
            format_room(r[0]) if len(r) == 1 else f"{format_room(r[0])}-{format_room(r[-1])}"
            for r in runs
        )

    def covers(self, booking: Booking) -> bool:
        """Whether a slot of `booking` is inside this closure."""
        if booking.room not in self.rooms:
            return False
        if not any(self.first <= d <= self.last for d in booking.dates):
            return False
        if self.hours is None or booking.cls == "A" or booking.hours is None:
            return True
        return booking.hours[0] < self.hours[1] and self.hours[0] < booking.hours[1]


def rooms_parse(text: str) -> tuple[int, ...] | None:
    """'all', '7', '5-10' or '1, 3, 5-7' as room numbers; None when it is not such a list (or
    names a room the building does not have)."""
    text = (text or "").strip().lower()
    if text in ("all", "*"):
        return tuple(range(1, room_count() + 1))
    rooms: set[int] = set()
    for part in text.split(","):
        match = _ROOMS_RE.fullmatch(part)
        if match is None:
            return None
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if not 1 <= first <= last <= room_count():
            return None
        rooms.update(range(first, last + 1))
    return tuple(sorted(rooms)) or None


def closures_parse(raw: dict[str, str]) -> list[Closure]:
    """The closures list (`{closures}:all`, as read) as Closures, soonest first."""
    found = []
    for closure_id, value in raw.items():
        rooms, first, last, start, end, by, at, reason = value.split("|", 7)
        hours = None if (start, end) == ("0", "24") else (int(start), int(end))
        found.append(
            Closure(
                closure_id,
                tuple(int(r) for r in rooms.split(",") if r),
                dt.date.fromisoformat(first),
                dt.date.fromisoformat(last),
                hours,
                reason,
                by,
                from_ms(at),
            )
        )
    return sorted(found, key=lambda c: (c.first, c.last, c.rooms, c.id))
