"""Booking values, validation and the pure rules (no store access here).

`slot_request_parse` turns raw form values into a `SlotRequest` or raises `InvalidRequest`
with one translated message per problem, so views never write anything on refusal.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import re
import secrets
import zoneinfo
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.utils import timezone
from django.utils.functional import lazy
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

CLASSES = ("A", "B", "C")
CLASS_DIGIT = {"A": 1, "B": 2, "C": 3}
HOURS_PER_DAY = 24
BOXES_PER_ROOM = 100
MAX_DATES = 31
# Bits one (room, day) holds per class: A one safe, B 24 hours, C 100 boxes x 24 hours.
SLOTS_PER_DAY = {"A": 1, "B": HOURS_PER_DAY, "C": HOURS_PER_DAY * BOXES_PER_ROOM}

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0/O, 1/I/L look-alikes
CODE_LENGTH = 10
_ID_RE = re.compile(r"([0-9]{3})-[a-z2-7]{26}")
_OWNER_RE = re.compile(r"[A-Za-z0-9_.@+-]{1,64}")
_REQUEST_ID_RE = re.compile(r"[A-Za-z0-9_-]{16,64}")
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


@dataclass(frozen=True)
class Slot:
    """One slot reported as taken: by a booking, or (held=True) by another buyer's hold."""

    date: dt.date
    hour: int | None = None
    box: int | None = None
    held: bool = False


@dataclass(frozen=True)
class Booking:
    """One booking record as stored."""

    id: str
    owner_id: str
    cls: str
    room: int
    dates: tuple[dt.date, ...]
    hours: tuple[int, int] | None
    boxes: tuple[int, ...]
    created_at: dt.datetime
    status: str
    collected_dates: tuple[dt.date, ...] = ()
    cancelled_at: dt.datetime | None = None
    cancelled_by: str = ""
    cancel_reason: str = ""
    code_sealed: str = field(default="", repr=False)
    ref: str = ""

    @property
    def room_label(self) -> str:
        return format_room(self.room)

    @property
    def reference(self) -> str:
        """The short reference people read out (B-7K3Q-9MXD), shown instead of the id."""
        from booking.references import reference_derived

        return self.ref or reference_derived(self.id, self.room)

    def pickup_code(self) -> str:
        """The pickup code, unsealed (show it to the owner only); '' if it cannot be read."""
        return code_unseal(self.code_sealed)


@dataclass(frozen=True)
class Hold:
    """Slots kept for one buyer until `expires_at`."""

    id: str
    owner_id: str
    request: SlotRequest
    expires_at: dt.datetime


# --- Season, time zone, rooms ---------------------------------------------------------------


def site_zone() -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(settings.TIME_ZONE)


def local_now(now: dt.datetime | None = None) -> dt.datetime:
    """`now` (default: the current time) in the site's time zone."""
    return (now or timezone.now()).astimezone(site_zone())


def site_today(now: dt.datetime | None = None) -> dt.date:
    """Today's date in the site's time zone."""
    return local_now(now).date()


def season_start() -> dt.date:
    return settings.STRONGROOM_SEASON_START


def season_end() -> dt.date:
    return settings.STRONGROOM_SEASON_END


def season_key() -> str:
    """The season's name in inventory keys: its first day (offsets count from it)."""
    return season_start().isoformat()


def season_days() -> list[dt.date]:
    """Every day of the season, in order."""
    start = season_start()
    return [start + dt.timedelta(days=i) for i in range((season_end() - start).days + 1)]


def season_bytes(cls: str) -> int:
    """The size of one room's bitmap of class `cls` for the whole season."""
    return -(-len(season_days()) * SLOTS_PER_DAY[cls] // 8)


def season_day(date: dt.date) -> int:
    """The day number of `date` in the season (0 = first day)."""
    return (date - season_start()).days


def in_season(date: dt.date) -> bool:
    return season_start() <= date <= season_end()


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


# --- Pickup codes ---------------------------------------------------------------------------


def code_new() -> str:
    """A fresh pickup code: CODE_LENGTH characters from CODE_ALPHABET, from `secrets`."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def code_normalise(text: str) -> str:
    """What a person typed, as a code: case, spaces and dashes ignored ('' if impossible)."""
    code = re.sub(r"[\s-]", "", text).upper()
    if len(code) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in code):
        return ""
    return code


def code_display(code: str) -> str:
    """ABCDE-FGHJK: easier to read out and type."""
    return f"{code[:5]}-{code[5:]}" if code else ""


def _derived_key(purpose: str) -> bytes:
    return hmac.new(settings.SECRET_KEY.encode(), purpose.encode(), hashlib.sha256).digest()


def code_mac(room: int, code: str) -> str:
    """The keyed hash stored to verify a code (HMAC-SHA256 with a key from SECRET_KEY)."""
    key = _derived_key("strongroom.booking.code-mac")
    return hmac.new(key, f"{room}|{code}".encode(), hashlib.sha256).hexdigest()


@cache
def _fernet(secret: str) -> Fernet:
    key = hmac.new(secret.encode(), b"strongroom.booking.code-seal", hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def code_seal(code: str) -> str:
    """The code encrypted for the owner to see again (Fernet, key derived from SECRET_KEY)."""
    return _fernet(settings.SECRET_KEY).encrypt(code.encode()).decode()


def code_unseal(sealed: str) -> str:
    try:
        return _fernet(settings.SECRET_KEY).decrypt(sealed.encode()).decode()
    except (InvalidToken, ValueError):
        return ""


# --- Validation -----------------------------------------------------------------------------


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


# --- Records from the store -----------------------------------------------------------------


def from_ms(value: str | int | float | None) -> dt.datetime | None:
    if value in (None, ""):
        return None
    return dt.datetime.fromtimestamp(int(float(value)) / 1000, tz=dt.UTC)


def to_ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def _dates(text: str) -> tuple[dt.date, ...]:
    return tuple(dt.date.fromisoformat(part) for part in text.split(",") if part)


def booking_from_hash(data: dict[str, str]) -> Booking | None:
    """A Booking from a record's HGETALL (None for an empty or foreign hash)."""
    if not data.get("id"):
        return None
    cls = data["cls"]
    hours = None if cls == "A" else (int(data["hstart"]), int(data["hend"]))
    return Booking(
        id=data["id"],
        owner_id=data["owner"],
        cls=cls,
        room=int(data["room"]),
        dates=_dates(data["dates"]),
        hours=hours,
        boxes=tuple(int(b) for b in data.get("boxes", "").split(",") if b),
        created_at=from_ms(data["created"]) or dt.datetime.fromtimestamp(0, tz=dt.UTC),
        status=data["status"],
        collected_dates=_dates(data.get("collected", "")),
        cancelled_at=from_ms(data.get("cancelled_at")),
        cancelled_by=data.get("cancelled_by", ""),
        cancel_reason=data.get("cancel_reason", ""),
        code_sealed=data.get("code_sealed", ""),
        ref=data.get("ref", ""),
    )


def flat_to_dict(flat: Sequence[str]) -> dict[str, str]:
    """A Lua HGETALL reply (flat list) as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def slots_from_reply(entries: Sequence[str], request_cls: str) -> list[Slot]:
    """Expand the function's 'day:box:mask:held' entries into one Slot per taken slot."""
    slots: set[Slot] = set()
    start = season_start()
    for entry in entries:
        day, box, mask, held = (int(float(part)) for part in entry.split(":"))
        date = start + dt.timedelta(days=day)
        if request_cls == "A":
            slots.add(Slot(date, None, None, bool(held)))
            continue
        for hour in range(HOURS_PER_DAY):
            if mask & (1 << (23 - hour)):
                slots.add(Slot(date, hour, box or None, bool(held)))
    return sorted(slots, key=lambda s: (s.date, s.box or 0, s.hour or 0, s.held))
