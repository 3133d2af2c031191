"""Collecting a booking at the safe: room + pickup code, on a booked day and hour. Wrong codes
lock the client that types them (per room and in every room), never the room: an owner is not
refused because others guessed (Redis Functions booking_pickup and booking_pickup_miss)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from booking.domain.codes import code_mac, code_normalise
from booking.domain.keys import RoomKeys, pickup_client_failures, pickup_client_lock
from booking.domain.records import Booking, booking_from_hash, flat_to_dict
from booking.domain.rules import format_room, local_now, request_id_new, request_id_valid
from booking.domain.values import room_number
from strongroom.calls import FunctionSpec
from strongroom.clock import from_ms, to_ms
from strongroom.store import durable_fcall, fcalls, text_or_none

PICKUP = FunctionSpec(
    "booking_pickup",
    "PICKUP",
    ("lock", "failures", "codes", "record", "audit", "stats"),
    ("code_mac", "booking_id", "now_ms", "today", "minute", "grace_minutes", "max_failures",
     "window_ms", "lock_ms", "attempt_id", "audit_maxlen", "room", "yesterday"),
    replies=("collected record", "already_collected record", "cancelled record",
             "wrong_day record", "wrong_hour record", "wrong_code tries_left", "locked until",
             "retry booking_id", "invalid what"),
)  # fmt: skip
PICKUP_MISS = FunctionSpec(
    "booking_pickup_miss",
    "PICKUP_MISS",
    ("failures", "lock"),
    ("failure", "now_ms", "max_failures", "window_ms", "lock_ms"),
    replies=("counted tries_left", "locked until"),
)


@dataclass(frozen=True)
class PickupResult:
    ok: bool
    outcome: str
    message: Any
    booking: Booking | None = None
    locked_until: dt.datetime | None = None
    tries_left: int | None = None  # after a wrong code: how many more before the lock


TRIES_WARNING = 3  # a wrong code says how many tries are left from this many down


_PICKUP_MESSAGES = {
    "collected": _("The safe is open: enjoy your treasure."),
    "wrong_code": _("That code does not open a safe in this room."),
    "wrong_day": _("This booking is not for today."),
    "wrong_hour": _("This booking is not for this hour."),
    "already_collected": _("This treasure has already been collected."),
    "cancelled": _("This booking was cancelled."),
    "locked": _("Too many wrong codes from this device: it is locked out of pickups for a while."),
    "invalid": _("Enter the room number and the code of your booking."),
}


def booking_pickup(
    *,
    client: redis.Redis,
    room: int | str,
    code: str,
    now: dt.datetime | None = None,
    attempt_id: str | None = None,
    client_id: str = "",
) -> PickupResult:
    """Collect a booking with room + code: on a booked day, within its hours + grace, once a day.
    Wrong codes are throttled per client (`client_id`, the address the request came from): per
    room (STRONGROOM_PICKUP_MAX_FAILURES) and in all rooms together
    (STRONGROOM_PICKUP_CLIENT_MAX_FAILURES), each within STRONGROOM_PICKUP_WINDOW_SECONDS; a
    client over either limit is locked for STRONGROOM_PICKUP_LOCK_SECONDS. Round trips: 2 (the
    code and the client's lock, then the function; a wrong code's count rides along).

    `attempt_id` (made by the caller, e.g. carried by the kiosk form) makes a repeat of the same
    attempt harmless: the person who just collected sees "collected" again and a wrong code is
    counted once; without one, each call makes its own (redis-py retries stay safe)."""
    attempt = attempt_id if attempt_id and request_id_valid(attempt_id) else request_id_new()
    number = room_number(room)
    typed = code if isinstance(code, str) and len(code) <= 64 else ""
    if number is None and isinstance(room, str) and room.strip():
        message = _("There is no room %(room)s here: rooms are numbered 001 to %(last)s.") % {
            "room": room.strip()[:8],
            "last": format_room(settings.STRONGROOM_ROOM_COUNT),
        }
        return PickupResult(False, "no_room", message)
    if number is None or not typed.strip():
        return PickupResult(False, "invalid", _PICKUP_MESSAGES["invalid"])
    keys = RoomKeys(number)
    moment = local_now(now)
    normal = code_normalise(typed)
    # A malformed code is a wrong code too (it counts towards the lock), never a lookup hint.
    mac = code_mac(number, normal) if normal else "malformed"
    who = client_id[:100] or "unknown"
    pipe = client.pipeline(transaction=False)
    pipe.hget(keys.codes, mac)
    pipe.get(pickup_client_lock(who))
    found, locked = pipe.execute()
    if locked:
        return PickupResult(
            False, "locked", _PICKUP_MESSAGES["locked"], locked_until=from_ms(locked)
        )
    booking_id = text_or_none(found) or ""
    if not booking_id:
        return _wrong_code(client, keys, who, mac, attempt, moment, number)
    for _attempt in range(3):
        args = {**_pickup_args(moment, number, mac, attempt), "booking_id": booking_id}
        call_keys = {
            "lock": keys.pickup_lock(who),
            "failures": keys.pickup_failures(who),
            "codes": keys.codes,
            "record": keys.record(booking_id or "-"),
            "audit": keys.audit,
            "stats": keys.stats,
        }
        call = PICKUP.call(keys=call_keys, args=args)
        answer = PICKUP.answer_of(durable_fcall(client, PICKUP.name, *call))
        if answer["status"] != "retry":
            break
        booking_id = answer["booking_id"]
    outcome = answer["status"]
    if outcome == "locked":
        return PickupResult(
            False, outcome, _PICKUP_MESSAGES[outcome], locked_until=from_ms(answer["until"])
        )
    if outcome == "wrong_code":
        return PickupResult(False, outcome, _PICKUP_MESSAGES[outcome])
    booking = booking_from_hash(flat_to_dict(answer["record"]))
    return PickupResult(outcome == "collected", outcome, _PICKUP_MESSAGES[outcome], booking)


def _pickup_args(moment: dt.datetime, number: int, mac: str, attempt: str) -> dict[str, object]:
    return {
        "code_mac": mac,
        "booking_id": "",
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


def _wrong_code(
    client: redis.Redis,
    keys: RoomKeys,
    who: str,
    mac: str,
    attempt: str,
    moment: dt.datetime,
    number: int,
) -> PickupResult:
    """A code no booking of the room has: counted against the client in the room (the room's
    function, which also answers if the code became valid meanwhile) and in every room (the
    client's own function), one pipeline. Nothing here needs the disk: no WAITAOF."""
    call_keys = {
        "lock": keys.pickup_lock(who),
        "failures": keys.pickup_failures(who),
        "codes": keys.codes,
        "record": keys.record("-"),
        "audit": keys.audit,
        "stats": keys.stats,
    }
    room_call = PICKUP.call(keys=call_keys, args=_pickup_args(moment, number, mac, attempt))
    miss_call = PICKUP_MISS.call(
        keys={"failures": pickup_client_failures(who), "lock": pickup_client_lock(who)},
        args={
            "failure": f"{attempt}|{number}|{mac}",
            "now_ms": to_ms(moment),
            "max_failures": settings.STRONGROOM_PICKUP_CLIENT_MAX_FAILURES,
            "window_ms": settings.STRONGROOM_PICKUP_WINDOW_SECONDS * 1000,
            "lock_ms": settings.STRONGROOM_PICKUP_LOCK_SECONDS * 1000,
        },
    )
    room_reply, miss_reply = fcalls(
        client, [(PICKUP.name, *room_call), (PICKUP_MISS.name, *miss_call)]
    )
    answers = (PICKUP.answer_of(room_reply), PICKUP_MISS.answer_of(miss_reply))
    for answer in answers:
        if answer["status"] == "locked":
            return PickupResult(
                False, "locked", _PICKUP_MESSAGES["locked"], locked_until=from_ms(answer["until"])
            )
    # 'retry': the code was made between the two reads; the caller's next press finds it.
    left = [int(a["tries_left"]) for a in answers if a["status"] in ("wrong_code", "counted")]
    fewest = min(left) if left else None
    return PickupResult(
        False,
        "wrong_code",
        _PICKUP_MESSAGES["wrong_code"],
        tries_left=fewest if fewest is not None and fewest <= TRIES_WARNING else None,
    )
