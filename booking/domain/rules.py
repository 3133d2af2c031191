"""The booking rules: classes and sizes, the season, the site's clock and time zone, rooms,
which days can be booked, and ids (no store access here)."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import re
import secrets
import zoneinfo
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.utils import timezone

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


@dataclass(frozen=True)
class Season:
    """The season's first and last day and the site's time zone, as the settings say."""

    start: dt.date
    end: dt.date
    zone: zoneinfo.ZoneInfo


_SEASON_SETTINGS = frozenset({"STRONGROOM_SEASON_START", "STRONGROOM_SEASON_END", "TIME_ZONE"})
_season_kept: Season | None = None


def season() -> Season:
    """The season and zone, read from the settings once per change of them: a calendar asks
    for them hundreds of times a request, and each lazy settings look-up costs microseconds."""
    global _season_kept
    kept = _season_kept
    if kept is None:
        kept = _season_kept = Season(
            start=settings.STRONGROOM_SEASON_START,
            end=settings.STRONGROOM_SEASON_END,
            zone=zoneinfo.ZoneInfo(settings.TIME_ZONE),
        )
    return kept


def _season_forget(*, setting: str, **_kwargs: Any) -> None:
    global _season_kept
    if setting in _SEASON_SETTINGS:
        _season_kept = None


setting_changed.connect(_season_forget, dispatch_uid="booking.domain.rules.season")


def site_zone() -> zoneinfo.ZoneInfo:
    return season().zone


def local_now(now: dt.datetime | None = None) -> dt.datetime:
    """`now` (default: the current time) in the site's time zone."""
    return (now or timezone.now()).astimezone(site_zone())


def site_today(now: dt.datetime | None = None) -> dt.date:
    """Today's date in the site's time zone."""
    return local_now(now).date()


def season_start() -> dt.date:
    return season().start


def season_end() -> dt.date:
    return season().end


def season_key() -> str:
    """The season's name in inventory keys: its first day (offsets count from it)."""
    return season_start().isoformat()


def season_days() -> list[dt.date]:
    """Every day of the season, in order."""
    start, end = season().start, season().end
    return [start + dt.timedelta(days=i) for i in range((end - start).days + 1)]


def season_bytes(cls: str) -> int:
    """The size of one room's bitmap of class `cls` for the whole season."""
    return -(-len(season_days()) * SLOTS_PER_DAY[cls] // 8)


def season_day(date: dt.date) -> int:
    """The day number of `date` in the season (0 = first day)."""
    return (date - season_start()).days


def first_bookable_day(now: dt.datetime | None = None) -> int:
    """The season day number of tomorrow (site time): earlier days can no longer be booked."""
    return season_day(site_today(now) + dt.timedelta(days=1))


def in_season(date: dt.date) -> bool:
    kept = season()
    return kept.start <= date <= kept.end


def room_count() -> int:
    return settings.STRONGROOM_ROOM_COUNT


def format_room(room: int) -> str:
    """Rooms are shown with three digits: 007."""
    return f"{room:03d}"


def day_refusal(date: dt.date, today: dt.date) -> str:
    """Why a day cannot be booked ('' when it can): outside_season, past or today."""
    if not in_season(date):
        return "outside_season"
    if date < today:
        return "past"
    if date == today:
        return "today"
    return ""


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


def check_id(kind: str, value: str, room: int) -> None:
    """An id made for another room is a programming error."""
    if booking_id_room(value) != room:
        raise ValueError(f"{kind} {value!r} is not an id of room {room}")
