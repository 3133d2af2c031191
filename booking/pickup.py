"""Collecting a booking at the safe: room + pickup code, on a booked day and hour, wrong codes
throttled per room (one Redis Function, booking_pickup)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from booking.calls import PICKUP
from booking.codes import code_mac, code_normalise
from booking.keys import RoomKeys
from booking.records import Booking, booking_from_hash, flat_to_dict
from booking.rules import (
    format_room,
    local_now,
    request_id_new,
    request_id_valid,
    room_count,
)
from strongroom.clock import from_ms, to_ms
from strongroom.store import durable_fcall, text_or_none


@dataclass(frozen=True)
class PickupResult:
    ok: bool
    outcome: str
    message: Any
    booking: Booking | None = None
    locked_until: dt.datetime | None = None


_PICKUP_MESSAGES = {
    "collected": _("The safe is open: enjoy your treasure."),
    "wrong_code": _("That code does not open a safe in this room."),
    "wrong_day": _("This booking is not for today."),
    "wrong_hour": _("This booking is not for this hour."),
    "already_collected": _("This treasure has already been collected."),
    "cancelled": _("This booking was cancelled."),
    "locked": _("Too many wrong codes: pickup in this room is locked for a while."),
    "invalid": _("Enter the room number and the code of your booking."),
}


def _pickup_room(room: int | str) -> int | None:
    if isinstance(room, bool):
        return None
    if isinstance(room, str):
        text = room.strip(" ")
        if not (text.isascii() and text.isdigit() and len(text) <= 4):
            return None
        room = int(text)
    return room if isinstance(room, int) and 1 <= room <= room_count() else None


def booking_pickup(
    *,
    client: redis.Redis,
    room: int | str,
    code: str,
    now: dt.datetime | None = None,
    attempt_id: str | None = None,
) -> PickupResult:
    """Collect a booking with room + code: on a booked day, within its hours + grace, once a day.
    Wrong codes are throttled per room.

    `attempt_id` (made by the caller, e.g. carried by the kiosk form) makes a repeat of the same
    attempt harmless: the person who just collected sees "collected" again and a wrong code is
    counted once; without one, each call makes its own (redis-py retries stay safe)."""
    attempt = attempt_id if request_id_valid(attempt_id) else request_id_new()
    number = _pickup_room(room)
    typed = code if isinstance(code, str) and len(code) <= 64 else ""
    if number is None or not typed.strip():
        return PickupResult(False, "invalid", _PICKUP_MESSAGES["invalid"])
    keys = RoomKeys(number)
    moment = local_now(now)
    normal = code_normalise(typed)
    # A malformed code is a wrong code too (it counts towards the lock), never a lookup hint.
    mac = code_mac(number, normal) if normal else "malformed"
    booking_id = text_or_none(client.hget(keys.codes, mac)) or ""
    for _attempt in range(3):
        args = {
            "code_mac": mac,
            "booking_id": booking_id,
            "now_ms": to_ms(moment),
            "today": moment.date().isoformat(),
            "minute": moment.hour * 60 + moment.minute,
            "grace_minutes": settings.STRONGROOM_PICKUP_GRACE_MINUTES,
            "max_failures": settings.STRONGROOM_PICKUP_MAX_FAILURES,
            "window_ms": settings.STRONGROOM_PICKUP_WINDOW_SECONDS * 1000,
            "lock_ms": settings.STRONGROOM_PICKUP_LOCK_SECONDS * 1000,
            "attempt_id": attempt,
            "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
            "room": format_room(number),
            "yesterday": (moment.date() - dt.timedelta(days=1)).isoformat(),
        }
        call_keys = {
            "lock": keys.pickup_lock,
            "failures": keys.pickup_failures,
            "codes": keys.codes,
            "record": keys.record(booking_id or "-"),
            "audit": keys.audit,
            "stats": keys.stats,
        }
        reply = durable_fcall(client, PICKUP.name, *PICKUP.call(keys=call_keys, args=args))
        if reply[0] != "retry":
            break
        booking_id = reply[1]
    outcome = reply[0]
    if outcome == "locked":
        return PickupResult(
            False, outcome, _PICKUP_MESSAGES[outcome], locked_until=from_ms(reply[1])
        )
    if outcome == "wrong_code":
        return PickupResult(False, outcome, _PICKUP_MESSAGES[outcome])
    booking = booking_from_hash(flat_to_dict(reply[1]))
    return PickupResult(outcome == "collected", outcome, _PICKUP_MESSAGES[outcome], booking)
