"""Collecting a booking at the safe: room + pickup code, on a booked day and hour. The right
code always opens (Redis Function booking_pickup); wrong codes are slowed, never turned into a
refusal: each one answers with a delay (Retry-After) that grows with the client's recent wrong
codes in the room and in every room, up to a ceiling."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from booking.domain.codes import code_mac, code_normalise
from booking.domain.keys import RoomKeys, pickup_client_failures
from booking.domain.records import Booking, booking_from_hash, flat_to_dict
from booking.domain.refusals import room_refusal, shown_value
from booking.domain.rules import format_room, local_now, request_id_new, request_id_valid
from booking.domain.values import room_number, whole_number
from booking.engine.audit import audit_write
from strongroom.calls import FunctionSpec
from strongroom.clock import from_ms, to_ms
from strongroom.decoders import text_or_none
from strongroom.durable import durable_fcall

PICKUP = FunctionSpec(
    "booking_pickup",
    "PICKUP",
    ("codes", "record", "audit", "stats", "edition"),
    ("code_mac", "booking_id", "now_ms", "today", "minute", "grace_minutes", "attempt_id",
     "audit_maxlen", "room", "yesterday"),
    replies=("collected record", "already_collected record", "cancelled record",
             "wrong_day record", "wrong_hour record", "wrong_code", "retry booking_id",
             "invalid what"),
)  # fmt: skip

# Wrong codes remembered per client and room (and per client): enough to reach the ceiling and
# to tell staff "1,024 wrong codes", bounded however fast a client guesses.
MISSES_KEPT = 1024


@dataclass(frozen=True)
class PickupResult:
    ok: bool
    outcome: str
    message: Any
    booking: Booking | None = None
    retry_after: int = 0  # after a wrong code: seconds the kiosk asks the client to wait
    misses: int = 0  # after a wrong code: the client's recent wrong codes in this room
    come_on: dt.date | None = None  # wrong day or hour: the booked day to come back on


_PICKUP_MESSAGES = {
    "collected": _("The safe is open: enjoy your treasure."),
    "wrong_code": _("That code does not open a safe in this room."),
    "wrong_day": _("This booking is not for today."),
    "wrong_hour": _("This booking is not for this hour."),
    "already_collected": _("This treasure has already been collected."),
    "cancelled": _("This booking was cancelled."),
    "invalid": _("Enter the room number and the code of your booking."),
    "malformed": _(
        "That is not a pickup code: a code is 10 letters and digits, like ABCDE-23456 "
        "(without 0, 1, I, L or O). Check it and try again."
    ),
}
HANDED_MESSAGE = _(
    "This treasure has already been collected: it was handed over at the desk, and its code "
    "opens nothing any more."
)


def miss_delay(misses: int, *, free: int, ceiling: int) -> int:
    """Seconds to wait after the `misses`-th recent wrong code: none for the first `free`
    (typos), then 1, 2, 4, ... doubling, never more than `ceiling`."""
    over = misses - free
    if over <= 0:
        return 0
    return min(ceiling, 2 ** min(over - 1, 30))


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
    A right code opens whatever wrong codes came before, from this client or any other. A wrong
    code is counted against the client (`client_id`, the address the request came from) in the
    room and in every room, within STRONGROOM_PICKUP_WINDOW_SECONDS, and answers with a delay
    (`retry_after`, see `miss_delay`). Round trips: 2 (the code, then the function or the count).

    `attempt_id` (made by the caller, e.g. carried by the kiosk form) makes a repeat of the same
    attempt harmless: the person who just collected sees "collected" again and a wrong code is
    counted once; without one, each call makes its own (redis-py retries stay safe)."""
    attempt = attempt_id if attempt_id and request_id_valid(attempt_id) else request_id_new()
    # The room is a number as on every form, the digits 0-9 only (a full-width one is said to be
    # no number, as the booking form says it); the code's letters and digits are read whatever
    # the keyboard, by code_normalise.
    number = room_number(room)
    typed = code if isinstance(code, str) and len(code) <= 64 else ""
    if number is None and isinstance(room, str) and whole_number(room) is None and room.strip():
        return PickupResult(False, "no_room", room_refusal(room.strip()))
    if number is None and isinstance(room, str) and room.strip():
        message = _("There is no room %(room)s here: rooms are numbered 001 to %(last)s.") % {
            "room": shown_value(room.strip()),
            "last": format_room(settings.STRONGROOM_ROOM_COUNT),
        }
        return PickupResult(False, "no_room", message)
    if number is None or not typed.strip():
        return PickupResult(False, "invalid", _PICKUP_MESSAGES["invalid"])
    keys = RoomKeys(number)
    moment = local_now(now)
    normal = code_normalise(typed)
    if not normal:
        # What cannot be a code (its length, its characters) is a typo, not a guess: said so,
        # and not counted (saying it tells a guesser nothing the code's format does not).
        return PickupResult(False, "malformed", _PICKUP_MESSAGES["malformed"])
    mac = code_mac(number, normal)
    who = client_id[:100] or "unknown"
    booking_id = text_or_none(client.hget(keys.codes, mac)) or ""
    if not booking_id:
        return _wrong_code(client, keys, who, mac, attempt, moment)
    for _attempt in range(3):
        args = {**_pickup_args(moment, number, mac, attempt), "booking_id": booking_id}
        call_keys = {
            "codes": keys.codes,
            "record": keys.record(booking_id or "-"),
            "audit": keys.audit,
            "stats": keys.stats,
            "edition": keys.edition,
        }
        call = PICKUP.call(keys=call_keys, args=args)
        answer = PICKUP.answer_of(durable_fcall(client, PICKUP.name, *call, first=True))
        if answer["status"] != "retry":
            break
        booking_id = answer["booking_id"]
    outcome = answer["status"]
    if outcome == "wrong_code":
        # The code's booking went (cancelled or moved) between the lookup and the function.
        return _wrong_code(client, keys, who, mac, attempt, moment)
    booking = booking_from_hash(flat_to_dict(answer["record"]))
    if outcome == "already_collected" and booking is not None and booking.handed:  # no day opens
        return PickupResult(False, outcome, HANDED_MESSAGE, booking)
    # Also after "already collected": a day of it still ahead (last night's grace ran on into
    # a booked day whose hours come later) is named.
    come_on = (
        _come_on(booking, moment)
        if outcome in ("wrong_day", "wrong_hour", "already_collected")
        else None
    )
    return PickupResult(
        outcome == "collected", outcome, _PICKUP_MESSAGES[outcome], booking, come_on=come_on
    )


def pickup_window(booking: Booking) -> tuple[int, int] | None:
    """When on a booked day the code opens, in minutes from that day's midnight: from the
    first booked hour to the last one's end and the grace (past 1440: into the next day);
    None for class A (the whole day)."""
    if booking.hours is None:
        return None
    grace = settings.STRONGROOM_PICKUP_GRACE_MINUTES
    return booking.hours[0] * 60, booking.hours[1] * 60 + grace


def pickup_still_open(
    booking: Booking, *, now: dt.datetime | None = None, day: dt.date | None = None
) -> bool:
    """Whether the pickup window of `day` (default: the booking's last day) has not ended at
    `now`: open, or still to come. Class A's ends at the next midnight; B and C's at the end
    of the last booked hour and the grace, which runs on into the next day after 24:00 (the
    kiosk opens then: booking_pickup's "yesterday"). Counted in whole minutes of the site's
    clock, as the kiosk's function counts them."""
    moment = local_now(now)
    booked = booking.dates[-1] if day is None else day
    window = pickup_window(booking)
    end = 24 * 60 if window is None else window[1]
    minute = (moment.date() - booked).days * 24 * 60 + moment.hour * 60 + moment.minute
    return minute < end


def pickup_first_open_day(now: dt.datetime | None = None) -> dt.date:
    """The earliest booked day whose pickup may still be open at `now`: yesterday while a grace
    after midnight may still run (see `pickup_still_open`), else today."""
    grace = dt.timedelta(minutes=settings.STRONGROOM_PICKUP_GRACE_MINUTES)
    return (local_now(now) - grace).date()


def _come_on(booking: Booking | None, moment: dt.datetime) -> dt.date | None:
    """The next booked day not yet collected (today for a wrong hour, unless today's hours and
    their grace are over); None if all have passed."""
    if booking is None:
        return None
    today = moment.date()
    over_today = not pickup_still_open(booking, now=moment, day=today)
    ahead = [
        d
        for d in booking.dates
        if (d > today or (d == today and not over_today)) and d not in booking.collected_dates
    ]
    return ahead[0] if ahead else None


def _pickup_args(moment: dt.datetime, number: int, mac: str, attempt: str) -> dict[str, object]:
    return {
        "code_mac": mac,
        "booking_id": "",
        "now_ms": to_ms(moment),
        "today": moment.date().isoformat(),
        "minute": moment.hour * 60 + moment.minute,
        "grace_minutes": settings.STRONGROOM_PICKUP_GRACE_MINUTES,
        "attempt_id": attempt,
        "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
        "room": format_room(number),
        "yesterday": (moment.date() - dt.timedelta(days=1)).isoformat(),
    }


def _wrong_code(
    client: redis.Redis, keys: RoomKeys, who: str, mac: str, attempt: str, moment: dt.datetime
) -> PickupResult:
    """A code no booking of the room has: counted (once per attempt) against the client in the
    room and in every room, in one pipeline; the answer's delay is the larger of the two. Every
    doubling of the room's count (4, 8, 16, ...) writes one audit entry, so a guesser shows in
    the staff audit without pushing the room's other entries out of its capped stream."""
    now_ms = to_ms(moment)
    window_ms = settings.STRONGROOM_PICKUP_WINDOW_SECONDS * 1000
    member = f"{attempt}|{mac}"
    pipe = client.pipeline(transaction=False)
    for key in (keys.pickup_failures(who), pickup_client_failures(who)):
        pipe.zadd(key, {member: now_ms}, nx=True)
        pipe.zremrangebyscore(key, "-inf", f"({now_ms - window_ms}")
        pipe.zremrangebyrank(key, 0, -MISSES_KEPT - 1)
        pipe.zcard(key)
        pipe.pexpire(key, window_ms)
    replies = pipe.execute()
    added, in_room, in_all = replies[0], int(replies[3]), int(replies[8])
    ceiling = settings.STRONGROOM_PICKUP_DELAY_CEILING_SECONDS
    delay = max(
        miss_delay(in_room, free=settings.STRONGROOM_PICKUP_FREE_MISSES, ceiling=ceiling),
        miss_delay(in_all, free=settings.STRONGROOM_PICKUP_CLIENT_FREE_MISSES, ceiling=ceiling),
    )
    if added and in_room >= 4 and in_room & (in_room - 1) == 0:
        _audit_misses(client, keys, who, in_room, now_ms)
    return PickupResult(
        False,
        "wrong_code",
        _PICKUP_MESSAGES["wrong_code"],
        retry_after=delay,
        misses=in_room,
    )


def _audit_misses(client: redis.Redis, keys: RoomKeys, who: str, misses: int, now_ms: int) -> None:
    """One 'pickup_failed' entry in the room's audit stream."""
    minutes = max(1, settings.STRONGROOM_PICKUP_WINDOW_SECONDS // 60)
    audit_write(
        client=client,
        room=keys.room,
        kind="pickup_failed",
        actor="",
        detail=f"{misses} wrong codes from {who} within {minutes} min",
        now=from_ms(now_ms),
    )
