"""Cancelling a booking (the owner before its first day, staff until collection): one Redis
Function on the booking's room, durable (FCALL + WAITAOF), and the words of each outcome."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from booking.domain.keys import (
    RoomKeys,
)
from booking.domain.records import (
    Booking,
    booking_from_hash,
    flat_to_dict,
)
from booking.domain.rules import (
    booking_id_room,
    first_bookable_day,
    hold_new_id,
    local_now,
    priority_day_starts,
    reason_clean,
    request_id_new,
    request_id_valid,
)
from booking.engine.bookings import MOVE_HOPS, booking_get
from strongroom.calls import FunctionSpec
from strongroom.clock import to_ms
from strongroom.decoders import text_values
from strongroom.durable import durable_fcall
from strongroom.outbox import sender_wake

CANCEL = FunctionSpec(
    "booking_cancel",
    "CANCEL",
    ("record", "registry", "audit", "stats", "outbox", "waits", "wait_notices",
     "holds", "hold_days", "edition", "closures"),
    ("actor", "is_staff", "today", "reason", "now_ms", "audit_maxlen", "request_id", "first_day",
     "priority_hold_id", "priority_hold_ms", "day_starts"),
    replies=("cancelled record", "already_cancelled", "not_found", "forbidden", "collected",
             "started", "partly_collected", "stale", "moved", "invalid what"),
)  # fmt: skip


@dataclass(frozen=True)
class CancelResult:
    ok: bool
    outcome: str
    message: Any
    booking: Booking | None = None


_CANCEL_MESSAGES = {
    "cancelled": _("The booking is cancelled; its treasures are free again."),
    "already_cancelled": _("This booking was already cancelled."),
    "not_found": _("There is no such booking."),
    "forbidden": _("You can only cancel your own bookings."),
    "collected": _("This booking has been collected and can no longer be cancelled."),
    "started": _("Bookings can be cancelled only before their first day; ask the staff."),
    "partly_collected": _("Some of its days are collected already: it can no longer be cancelled."),
    "moved": _("This booking has moved to another room; nothing was cancelled."),
    "stale": _("The booking changed while it was being cancelled: please try again."),
}


def cancel_refusal(booking: Booking) -> str:
    """Why the owner cannot cancel `booking` online (it is not confirmed, or its first day
    has come): the message the engine would answer."""
    if booking.status == "cancelled":
        return str(_CANCEL_MESSAGES["already_cancelled"])
    if booking.status == "collected":
        return str(_CANCEL_MESSAGES["collected"])
    return str(_CANCEL_MESSAGES["started"])


def booking_cancel(
    *,
    client: redis.Redis,
    booking_id: str,
    actor_id: str,
    actor_is_staff: bool,
    reason: str = "",
    now: dt.datetime | None = None,
    request_id: str | None = None,
    follow_moves: bool = True,
) -> CancelResult:
    """Cancel a booking: the owner before its first day, staff any time before collection.

    `request_id` (made by the caller, e.g. carried by the confirmation form) lets a repeat of
    the same request, a double click or a retry, answer "cancelled" again rather than
    "already cancelled"; without one, each call makes its own (redis-py retries stay safe).
    A booking moved to another room (a page read before the move) is cancelled where it is
    now: its old record holds no slots (`follow_moves=False`: answered "moved" instead)."""
    request = request_id if request_id and request_id_valid(request_id) else request_id_new()
    reason = reason_clean(reason)
    for _hop in range(MOVE_HOPS):
        result = _cancel_here(client, booking_id, actor_id, actor_is_staff, reason, now, request)
        if result.outcome != "moved" or not follow_moves:
            return result
        # Where the booking is now: booking_get follows every move from here and finishes one
        # whose new room has not confirmed yet (the mover slow or gone).
        now_at = booking_get(client=client, booking_id=booking_id)
        if now_at is None or now_at.id == booking_id:
            break
        booking_id = now_at.id
    return CancelResult(False, "not_found", _CANCEL_MESSAGES["not_found"])


def _cancel_here(
    client: redis.Redis,
    booking_id: str,
    actor_id: str,
    actor_is_staff: bool,
    reason: str,
    now: dt.datetime | None,
    request_id: str,
) -> CancelResult:
    """One room's cancel call (outcome "moved": the record is a moved booking's pointer)."""
    room = booking_id_room(booking_id)
    if room is None or not isinstance(actor_id, str) or not actor_id:
        return CancelResult(False, "not_found", _CANCEL_MESSAGES["not_found"])
    keys = RoomKeys(room)
    today = local_now(now).date().isoformat()
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    for _attempt in range(3):
        cls, inventories = text_values(client.hmget(keys.record(booking_id), ["cls", "inv"]))
        if cls is None:
            return CancelResult(False, "not_found", _CANCEL_MESSAGES["not_found"])
        call = CANCEL.call(
            keys={
                "record": keys.record(booking_id),
                "registry": keys.registry,
                "edition": keys.edition,
                "audit": keys.audit,
                "stats": keys.stats,
                "outbox": keys.outbox,
                "waits": keys.waits,
                "wait_notices": keys.wait_notices,
                "holds": keys.holds,
                "hold_days": keys.hold_days,
                "closures": keys.closures,
            },
            args={
                "actor": actor_id,
                "is_staff": "1" if actor_is_staff else "0",
                "today": today,
                "reason": reason,
                "now_ms": now_ms,
                "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
                "request_id": request_id,
                "first_day": first_bookable_day(now),
                "priority_hold_id": hold_new_id(room=room),
                "priority_hold_ms": settings.STRONGROOM_WAIT_HOLD_SECONDS * 1000,
                "day_starts": priority_day_starts(now),
            },
            # The record's bitmaps, one per calendar month of its days (the function checks
            # that the record still names them).
            more_keys=(inventories or "").split(","),
        )
        answer = CANCEL.answer_of(durable_fcall(client, CANCEL.name, *call, first=True))
        if answer["status"] != "stale":
            break
    outcome = answer["status"]
    if outcome == "invalid":
        raise ValueError(f"{CANCEL.name} refused a malformed call ({answer['what']})")
    record = answer.get("record")
    booking = booking_from_hash(flat_to_dict(record)) if record else None
    if outcome == "cancelled":
        sender_wake(keys.outbox)  # the cancellation, and any waiter's notice, are in it
    return CancelResult(outcome == "cancelled", outcome, _CANCEL_MESSAGES[outcome], booking)
