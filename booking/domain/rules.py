"""The booking rules: classes and sizes, the season, the site's clock and time zone, rooms,
which days can be booked, and ids (no store access here)."""

from __future__ import annotations

import base64
import calendar
import datetime as dt
import hashlib
import re
import secrets
import zoneinfo
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.utils import timezone

from booking.domain.window import window_current

CLASSES = ("A", "B", "C")
CLASS_DIGIT = {"A": 1, "B": 2, "C": 3}
HOURS_PER_DAY = 24
BOXES_PER_ROOM = 100
MAX_DATES = 31
# Bits one (room, day) holds per class: A one safe, B 24 hours, C 100 boxes x 24 hours.
SLOTS_PER_DAY = {"A": 1, "B": HOURS_PER_DAY, "C": HOURS_PER_DAY * BOXES_PER_ROOM}

_ID_RE = re.compile(r"([0-9]{3})-[a-z2-7]{26}")
_OWNER_RE = re.compile(r"[A-Za-z0-9_.@+-]{1,64}")
_REQUEST_ID_RE = re.compile(r"[A-Za-z0-9_-]{16,64}")


_zone_kept: zoneinfo.ZoneInfo | None = None


def site_zone() -> zoneinfo.ZoneInfo:
    """The site's time zone, read from the settings once per change of them: a calendar asks
    for it hundreds of times a request, and each lazy settings look-up costs microseconds."""
    global _zone_kept
    kept = _zone_kept
    if kept is None:
        kept = _zone_kept = zoneinfo.ZoneInfo(settings.TIME_ZONE)
    return kept


def _zone_forget(*, setting: str, **_kwargs: Any) -> None:
    global _zone_kept
    if setting == "TIME_ZONE":
        _zone_kept = None


setting_changed.connect(_zone_forget, dispatch_uid="booking.domain.rules.zone")


def local_now(now: dt.datetime | None = None) -> dt.datetime:
    """`now` (default: the current time) in the site's time zone."""
    return (now or timezone.now()).astimezone(site_zone())


def site_today(now: dt.datetime | None = None) -> dt.date:
    """Today's date in the site's time zone."""
    return local_now(now).date()


def season_bounds(now: dt.datetime | None = None) -> tuple[dt.date, dt.date]:
    """The first and last day of the sales window in force (booking.domain.window) now."""
    return window_current().bounds(site_today(now))


def season_months(now: dt.datetime | None = None) -> list[dt.date]:
    """The first day of every month the season touches."""
    start, end = season_bounds(now)
    months, month = [], start.replace(day=1)
    while month <= end:
        months.append(month)
        month = (month + dt.timedelta(days=32)).replace(day=1)
    return months


def season_start(now: dt.datetime | None = None) -> dt.date:
    """The sales window's first day (a rolling window's is tomorrow)."""
    return season_bounds(now)[0]


def season_end(now: dt.datetime | None = None) -> dt.date:
    """The sales window's last day."""
    return season_bounds(now)[1]


def season_days(now: dt.datetime | None = None) -> list[dt.date]:
    """Every day of the sales window, in order."""
    start, end = season_bounds(now)
    return [start + dt.timedelta(days=i) for i in range((end - start).days + 1)]


# --- The calendar the inventory is addressed by ----------------------------------------------
# A day is stored as its calendar day number (days since 1970-01-01), whatever the season or
# sales window: holds, waits, records and statistics name the day itself, so no change of the
# window can move a slot to another day. Bitmaps are one per calendar month (see `month_name`).

CALENDAR_EPOCH = dt.date(1970, 1, 1)


def calendar_day(date: dt.date) -> int:
    """The day number of `date` in the calendar (1970-01-01 is 0)."""
    return (date - CALENDAR_EPOCH).days


def calendar_date(day: int) -> dt.date:
    """The date of calendar day number `day`."""
    return CALENDAR_EPOCH + dt.timedelta(days=day)


def month_name(date: dt.date) -> str:
    """The calendar month of `date` as inventory keys and statistics name it: '2026-12'."""
    return f"{date.year:04d}-{date.month:02d}"


def month_first(date: dt.date) -> dt.date:
    """The first day of `date`'s month."""
    return date.replace(day=1)


def month_length(date: dt.date) -> int:
    """Days in `date`'s month."""
    return calendar.monthrange(date.year, date.month)[1]


def month_bytes(cls: str, date: dt.date) -> int:
    """The size of one room's bitmap of class `cls` for `date`'s whole month."""
    return -(-month_length(date) * SLOTS_PER_DAY[cls] // 8)


def first_bookable_day(now: dt.datetime | None = None) -> int:
    """The calendar day number of tomorrow (site time): earlier days can no longer be booked."""
    return calendar_day(site_today(now) + dt.timedelta(days=1))


def day_starts_within(within_ms: int, now: dt.datetime | None = None) -> str:
    """The starts (epoch ms, comma-separated) of the first bookable day and of each day after
    it that begins less than `within_ms` after `now`: the booking functions end a hold no
    later than the start of its first day (from that midnight the day can no longer be
    booked), and only a day that begins before a hold of `within_ms` could end needs one. Each
    day's own start, so a zone whose days are 23 or 25 hours long is right too."""
    at = now or timezone.now()
    ends = at + dt.timedelta(milliseconds=within_ms)
    day, starts = site_today(at) + dt.timedelta(days=1), []
    while (start := dt.datetime.combine(day, dt.time(), tzinfo=site_zone())) < ends:
        starts.append(str(int(start.timestamp() * 1000)))
        day += dt.timedelta(days=1)
    return ",".join(starts)


def priority_day_starts(now: dt.datetime | None = None) -> str:
    """ARGV day_starts of a function that may place the waiting list's priority hold: the
    starts of the days such a hold may reach, whose ends it is capped at."""
    return day_starts_within(settings.STRONGROOM_WAIT_HOLD_SECONDS * 1000, now)


def in_season(date: dt.date, now: dt.datetime | None = None) -> bool:
    start, end = season_bounds(now)
    return start <= date <= end


def room_count() -> int:
    return settings.STRONGROOM_ROOM_COUNT


def format_room(room: int) -> str:
    """Rooms are shown with three digits: 007."""
    return f"{room:03d}"


def day_refusal(date: dt.date, today: dt.date) -> str:
    """Why a day cannot be booked ('' when it can): outside_season, past or today."""
    return day_refusals((date,), today)[date]


def day_refusals(dates: Iterable[dt.date], today: dt.date) -> dict[dt.date, str]:
    """`day_refusal` of each of `dates`, the window in force worked out once (a month's
    calendar asks for thirty days at a time)."""
    window = window_current()
    first, last = window.bounds(today)
    refusals = {}
    for date in dates:
        # A rolling window starts tomorrow: today and earlier days get their own reason.
        if not first <= date <= last and not (window.rolling and date <= today):
            refusals[date] = "outside_season"
        elif date < today:
            refusals[date] = "past"
        elif date == today:
            refusals[date] = "today"
        else:
            refusals[date] = ""
    return refusals


def bookable_days(dates: Iterable[dt.date], today: dt.date) -> list[dt.date]:
    """The dates of `dates` that can be booked when it is `today`, in order."""
    return [date for date, refusal in day_refusals(dates, today).items() if not refusal]


def hour_mask(start: int, end: int) -> int:
    """The 24-bit mask of hours [start, end): hour h is bit 2^(23-h), as in the bitmap."""
    return sum(1 << (23 - hour) for hour in range(start, end))


# --- Ids ------------------------------------------------------------------------------------


def booking_new_id(*, room: int) -> str:
    """A fresh booking id made by the client: the room (its hash tag) and 130 random bits."""
    token = base64.b32encode(secrets.token_bytes(16)).decode().rstrip("=").lower()
    return f"{format_room(room)}-{token}"


def booking_id_from(token: str, *, room: int) -> str:
    """A booking id derived from a client-made token (a form's request id) and the room: the
    same form sent twice names the same booking, which the claim recognises."""
    digest = hashlib.sha256(f"strongroom.booking|{token}".encode()).digest()[:16]
    return f"{format_room(room)}-{base64.b32encode(digest).decode().rstrip('=').lower()}"


def hold_new_id(*, room: int) -> str:
    """A fresh hold id; same shape as a booking id."""
    return booking_new_id(room=room)


def booking_id_room(booking_id: object) -> int | None:
    """The room a booking (or hold) id belongs to, or None when the id is malformed."""
    if not isinstance(booking_id, str):
        return None
    match = _ID_RE.fullmatch(booking_id)
    if match is None:
        return None
    room = int(match.group(1))
    return room if 1 <= room <= room_count() else None


def request_id_new() -> str:
    """A fresh id for one cancel or pickup request (a form carries it, so a repeat is seen)."""
    return secrets.token_urlsafe(16)


def request_id_valid(value: object) -> bool:
    """Whether `value` can be a request id: 16 to 64 URL-safe characters (it comes from forms)."""
    return isinstance(value, str) and _REQUEST_ID_RE.fullmatch(value) is not None


def check_owner_id(owner_id: object) -> str:
    """Owner ids are short, plain strings (person ids); anything else is a programming error."""
    if not isinstance(owner_id, str) or not _OWNER_RE.fullmatch(owner_id):
        raise ValueError(f"not an owner id: {owner_id!r}")
    return owner_id


# A booking's status, as stored and counted (the booking Lua writes the same words).
STATUSES = ("confirmed", "collected", "cancelled")
# The kinds of entries the booking functions write into each room's audit stream.
AUDIT_KINDS = (
    "claim", "cancel", "pickup", "pickup_failed", "flush", "hold", "move", "receipt", "handover",
)  # fmt: skip

REASON_LIMIT = 500  # characters of a cancel or flush reason that are kept


def reason_clean(reason: object) -> str:
    """A free-text reason on one line, at most REASON_LIMIT characters."""
    return " ".join(str(reason).split())[:REASON_LIMIT]


class IdRefused(ValueError):
    """A client-made id (from a form) that is not one of this room's, or that names another
    owner's booking: the form is old or altered."""


def check_id(kind: str, value: str, room: int) -> None:
    """An id made for another room (or malformed) is refused: `IdRefused`."""
    if booking_id_room(value) != room:
        raise IdRefused(f"{kind} {value!r} is not an id of room {room}")
