"""Reads of the staff dashboard, built on the owning apps' selectors (booking, accounts)."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import redis
from django.conf import settings

from accounts.selectors import DayVisits, person_names, visits_by_day
from booking.domain.records import Booking
from booking.domain.rules import local_now, season_days, season_end, season_start
from booking.selectors import (
    AuditEntry,
    Occupancy,
    audit_entries,
    booking_history,
    bookings_between,
    season_stats,
)
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
    read_at: dt.datetime
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
        read_at=moment,
        classes=tuple(classes),
        per_day=tuple(per_day),
        visits=tuple(visits),
        pickups=tuple(pickups),
        names=names,
        truncated=len(todays) >= limit,
    )


@dataclass(frozen=True)
class RecentOverview:
    """An overview and how old it is (seconds) when served from the worker's memory."""

    overview: Overview
    age_s: float
    max_age_s: float


_recent: dict[int, tuple[float, Overview]] = {}
_recent_lock = threading.Lock()


def overview_recent(
    *, client: redis.Redis, max_age_ms: int, clock: Callable[[], float] = time.monotonic
) -> RecentOverview:
    """The overview as this worker read it at most `max_age_ms` ago: the 300 rooms' counters are
    summed once per interval per worker, whatever the number of staff requests (O(1) a
    request). Only one thread reads when it is due; 0 reads every time."""
    if max_age_ms <= 0:
        return RecentOverview(overview(client=client), 0.0, 0.0)
    max_age = max_age_ms / 1000
    with _recent_lock:
        held = _recent.get(id(client))
        now = clock()
        if held is None or now - held[0] >= max_age or held[1].today != _today():
            held = (now, overview(client=client))
            _recent[id(client)] = held
        return RecentOverview(held[1], max(0.0, clock() - held[0]), max_age)


def overview_recent_forget() -> None:
    """Drop the overview held in memory (tests, after a flush of the store)."""
    with _recent_lock:
        _recent.clear()


def _today() -> dt.date:
    return local_now(dt.datetime.now(tz=dt.UTC)).date()


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
    unknown_name: str = ""  # the filter named a person nobody is


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


def booking_trail(*, client: redis.Redis, booking: Booking) -> list[LogEntry]:
    """The audit entries of one booking and of the records it was moved from (its claim and
    a move to another room stay under its earlier ids), newest first."""
    found = booking_history(client=client, booking_id=booking.id, moved_from=booking.moved_from)
    return [_from_booking(e) for e in found]
