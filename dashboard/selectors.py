"""Reads of the staff dashboard, built on the owning apps' selectors (booking, accounts)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import redis
from django.conf import settings

from accounts.selectors import DayVisits, person_names, visits_by_day
from booking.audit import AuditEntry, audit_entries, booking_audit
from booking.bitmap import day_inventory
from booking.records import Booking, bookings_between
from booking.rules import (
    format_room,
    local_now,
    season_days,
    season_end,
    season_start,
)
from booking.stats import Occupancy, season_stats
from strongroom.audit import StaffEntry, audit_kinds, staff_audit_entries


def scan_limit() -> int:
    """At most this many bookings are read for one overview or filter (settings)."""
    return settings.STRONGROOM_DASHBOARD_SCAN_LIMIT


# --- the overview ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClassFigures:
    cls: str
    for_today: int
    made_today: int
    season: int
    cancelled: int
    occupancy: Occupancy

    @property
    def percent(self) -> float:
        cap = self.occupancy.capacity
        return 100.0 * self.occupancy.booked / cap if cap else 0.0


@dataclass(frozen=True)
class Overview:
    today: dt.date
    classes: tuple[ClassFigures, ...]
    per_day: tuple[tuple[dt.date, int], ...]
    visits: tuple[DayVisits, ...]
    pickups: tuple[Booking, ...]
    names: dict[int, str]
    truncated: bool


def _visit_range(today: dt.date) -> tuple[dt.date, dt.date]:
    """The last 14 days up to today, or the season if today lies in it."""
    if season_start() <= today <= season_end():
        return season_start(), today
    return today - dt.timedelta(days=13), today


def pickups_due(bookings: Iterable[Booking], now: dt.datetime) -> list[Booking]:
    """Active bookings with a pickup still to come today (not collected today, hours not over),
    by start hour."""
    local = local_now(now)
    today = local.date()
    due = []
    for booking in bookings:
        if booking.status != "confirmed" or today not in booking.dates:
            continue
        if today in booking.collected_dates:
            continue
        if booking.hours is not None and booking.hours[1] <= local.hour:
            continue
        due.append(booking)
    return sorted(due, key=lambda b: (b.hours[0] if b.hours else -1, b.room, b.id))


def overview(*, client: redis.Redis, now: dt.datetime | None = None) -> Overview:
    """Every figure of the overview: bookings per class (for today, made today, season,
    cancelled), occupancy, bookings and visits per day from the rooms' stats counters
    (booking's `season_stats`, one pipeline), and today's pickups from today's bookings only.
    A constant number of round trips, whatever the number of bookings."""
    moment = now or dt.datetime.now(tz=dt.UTC)
    today = local_now(moment).date()
    limit = scan_limit()
    stats = season_stats(client=client, now=moment)
    classes = [
        ClassFigures(
            cls=c.cls,
            for_today=c.for_today,
            made_today=c.made_today,
            season=c.active,
            cancelled=c.statuses["cancelled"],
            occupancy=c.occupancy,
        )
        for c in stats.classes
    ]
    per_day = [
        (date, sum(c.active_per_day[i] for c in stats.classes))
        for i, date in enumerate(season_days())
    ]
    todays = bookings_between(client=client, start=today, end=today, limit=limit)
    first, last = _visit_range(today)
    visits = visits_by_day(client=client, start=first, end=last)
    pickups = pickups_due(todays, moment)
    names = names_of(client=client, ids=[b.owner_id for b in pickups])
    return Overview(
        today=today,
        classes=tuple(classes),
        per_day=tuple(per_day),
        visits=tuple(visits),
        pickups=tuple(pickups),
        names=names,
        truncated=len(todays) >= limit,
    )


def names_of(*, client: redis.Redis, ids: Iterable[str]) -> dict[int, str]:
    """Usernames for person ids given as strings (non-numeric ids are skipped)."""
    numeric = [int(i) for i in ids if isinstance(i, str) and i.isascii() and i.isdigit()]
    return person_names(client=client, person_ids=numeric)


# --- bookings ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BookingFilter:
    start: dt.date
    end: dt.date
    cls: str | None = None
    room: int | None = None
    status: str | None = None
    owner_id: str | None = None
    hour: int | None = None
    box: int | None = None


@dataclass(frozen=True)
class FilteredBookings:
    bookings: list[Booking]
    truncated: bool
    names: dict[int, str] = field(default_factory=dict)


def _matches(booking: Booking, wanted: BookingFilter) -> bool:
    if wanted.room is not None and booking.room != wanted.room:
        return False
    if wanted.status is not None and booking.status != wanted.status:
        return False
    if wanted.owner_id is not None and booking.owner_id != wanted.owner_id:
        return False
    if wanted.box is not None and wanted.box not in booking.boxes:
        return False
    return wanted.hour is None or (
        booking.hours is not None and booking.hours[0] <= wanted.hour < booking.hours[1]
    )


def bookings_filtered(*, client: redis.Redis, wanted: BookingFilter) -> FilteredBookings:
    """The bookings with a day in the range (the composite-score date index, by class when one
    is given), then narrowed by room, status, person and hour; by first date, class, room."""
    limit = scan_limit()
    found = bookings_between(
        client=client, start=wanted.start, end=wanted.end, cls=wanted.cls, limit=limit
    )
    chosen = [b for b in found if _matches(b, wanted)]
    return FilteredBookings(
        bookings=chosen,
        truncated=len(found) >= limit,
        names=names_of(client=client, ids=[b.owner_id for b in chosen]),
    )


# --- the occupancy map -------------------------------------------------------------------------

ROOMS_PER_FLOOR = 25


@dataclass(frozen=True)
class Floor:
    number: int
    rooms: tuple[int, ...]

    @property
    def label(self) -> str:
        return f"{format_room(self.rooms[0])}–{format_room(self.rooms[-1])}"


def floors() -> list[Floor]:
    """The building's rooms in floors of 25 (001-025 on floor 1, ...)."""
    rooms = list(range(1, settings.STRONGROOM_ROOM_COUNT + 1))
    return [
        Floor(i // ROOMS_PER_FLOOR + 1, tuple(rooms[i : i + ROOMS_PER_FLOOR]))
        for i in range(0, len(rooms), ROOMS_PER_FLOOR)
    ]


def hours_booked(mask: int, hours: Sequence[int]) -> int:
    """How many of `hours` are set in a 24-bit hour mask (bit 23 - h is hour h)."""
    return sum(1 for h in hours if mask & (1 << (23 - h)))


@dataclass(frozen=True)
class HeatCell:
    booked: int
    capacity: int
    room: int | None = None
    hour: int | None = None
    box: int | None = None

    @property
    def level(self) -> int:
        """0 (free) to 4 (full), for the heat colour."""
        if self.booked <= 0 or self.capacity <= 0:
            return 0
        return max(1, min(4, -(-4 * self.booked // self.capacity)))


@dataclass(frozen=True)
class HeatRow:
    label: str
    room: int | None
    floor: int | None
    cells: tuple[HeatCell, ...]
    booked: int
    capacity: int


@dataclass(frozen=True)
class HeatMap:
    cls: str
    date: dt.date
    summary_columns: tuple[str, ...]
    detail_columns: tuple[str, ...]
    summary: tuple[HeatRow, ...]
    detail: tuple[HeatRow, ...]
    floor: Floor | None
    hours: tuple[int, int] | None


BOX_GROUP = 10
HOUR_COLUMNS = tuple(f"{h:02d}" for h in range(24))


def occupancy_map(
    *,
    client: redis.Redis,
    cls: str,
    date: dt.date,
    floor: int | None = None,
    hours: tuple[int, int] | None = None,
) -> HeatMap:
    """A heat map of one class on one day (one pipeline): a summary row per floor, and for a
    chosen floor its rooms x hours (B) or rooms x boxes over an hour range (C); class A shows
    every room in the summary."""
    rooms = day_inventory(client=client, cls=cls, date=date).rooms
    all_floors = floors()
    chosen = next((f for f in all_floors if f.number == floor), None)
    if cls == "A":
        columns = tuple(f"+{i}" for i in range(ROOMS_PER_FLOOR))
        summary = [
            _row(fl.label, None, fl.number,
                 tuple(HeatCell(rooms[r][0], 1, room=r) for r in fl.rooms))
            for fl in all_floors
        ]  # fmt: skip
        return HeatMap(cls, date, columns, (), tuple(summary), (), None, None)
    if cls == "B":
        summary = [
            _row(fl.label, None, fl.number, tuple(
                HeatCell(sum(hours_booked(rooms[r][0], [h]) for r in fl.rooms), len(fl.rooms),
                         hour=h)
                for h in range(24)))
            for fl in all_floors
        ]  # fmt: skip
        detail = [
            _row(format_room(room), room, None, tuple(
                HeatCell(hours_booked(rooms[room][0], [h]), 1, room=room, hour=h)
                for h in range(24)))
            for room in (chosen.rooms if chosen else ())
        ]  # fmt: skip
        return HeatMap(cls, date, HOUR_COLUMNS, HOUR_COLUMNS, tuple(summary), tuple(detail),
                       chosen, None)  # fmt: skip
    span = list(range(*(hours or (0, 24))))
    groups = [range(g, g + BOX_GROUP) for g in range(1, 101, BOX_GROUP)]
    summary = [
        _row(fl.label, None, fl.number, tuple(
            HeatCell(sum(hours_booked(rooms[r][b - 1], span) for r in fl.rooms for b in g),
                     len(fl.rooms) * len(g) * len(span))
            for g in groups))
        for fl in all_floors
    ]  # fmt: skip
    detail = [
        _row(format_room(room), room, None, tuple(
            HeatCell(hours_booked(rooms[room][b - 1], span), len(span), room=room, box=b)
            for b in range(1, 101)))
        for room in (chosen.rooms if chosen else ())
    ]  # fmt: skip
    return HeatMap(
        cls, date, tuple(f"{g.start}–{g.stop - 1}" for g in groups),
        tuple(str(b) for b in range(1, 101)), tuple(summary), tuple(detail), chosen,
        hours or (0, 24),
    )  # fmt: skip


def _row(label: str, room: int | None, floor: int | None, cells: tuple[HeatCell, ...]) -> HeatRow:
    return HeatRow(
        label, room, floor, cells, sum(c.booked for c in cells), sum(c.capacity for c in cells)
    )


# --- the audit log -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LogEntry:
    at: dt.datetime
    kind: str
    actor: str
    booking_id: str
    room: int | None
    subject: str
    detail: str


def _from_staff(entry: StaffEntry) -> LogEntry:
    return LogEntry(entry.at, entry.kind, entry.actor, "", None, entry.subject, entry.detail)


def _from_booking(entry: AuditEntry) -> LogEntry:
    return LogEntry(entry.at, entry.kind, entry.actor, entry.booking_id, entry.room, "",
                    entry.detail)  # fmt: skip


def audit_log(
    *, client: redis.Redis, kind: str | None = None, count: int = 100, booking_id: str = ""
) -> list[LogEntry]:
    """Claims, cancels, pickups, flushes (the rooms' streams) and staff actions, newest first."""
    if kind is not None and kind not in audit_kinds():
        raise ValueError(f"no audit kind {kind!r}")
    merged: list[LogEntry] = []
    if kind is None or kind in audit_kinds("booking"):
        merged += [_from_booking(e) for e in audit_entries(client=client, kind=kind, count=count)]
    if kind is None or kind in audit_kinds("staff"):
        staff = staff_audit_entries(client=client, count=count, kind=kind)
        merged += [_from_staff(e) for e in staff]
    merged.sort(key=lambda e: e.at, reverse=True)
    return merged[:count]


def booking_trail(*, client: redis.Redis, booking_id: str) -> list[LogEntry]:
    """The audit entries of one booking, newest first."""
    return [_from_booking(e) for e in booking_audit(client=client, booking_id=booking_id)]
