"""Taking slots: claim (confirm a booking), hold (keep slots a while), release, cancel. Each
check-and-take is one Redis Function (booking/lua/booking.lua) on one room's keys; confirmed
changes go through `durable_fcall` (FCALL + WAITAOF, one round trip). Where one server holds
every key, a claim also writes the person and date indexes and counts the buyer's hourly
allowance in the same call; on a cluster it names the booking in the room's `unindexed` set for
the list readers to drain (booking.records), and the allowance is counted first, apart."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from accounts.services import window_gate
from booking.calls import CANCEL, CLAIM, HOLD, HOLD_RELEASE
from booking.codes import code_for, code_mac
from booking.keys import (
    RoomKeys,
    date_index,
    date_score,
    hold_of,
    pace_of,
    person_index,
    person_score,
)
from booking.parser import InvalidRequest, SlotRequest, check_dates, check_size
from booking.records import (
    Booking,
    Hold,
    Slot,
    booking_from_hash,
    flat_to_dict,
    indexes_after_claim,
    indexes_inline,
    indexes_write,
    slots_from_reply,
)
from booking.references import reference_new
from booking.rules import (
    booking_id_room,
    check_owner_id,
    format_room,
    hold_new_id,
    local_now,
    reason_clean,
    request_id_new,
    request_id_valid,
    season_bytes,
    season_days,
    season_key,
)
from booking.waits import first_bookable_day, waits_forget
from strongroom.clock import from_ms, to_ms
from strongroom.outbox import sender_wake
from strongroom.store import durable_fcall, fcall, load_functions, text_or_none, text_values

__all__ = [
    "CancelResult",
    "ClaimResult",
    "HoldResult",
    "booking_cancel",
    "booking_claim",
    "booking_hold",
    "booking_hold_release",
    "holds_release_of",
    "indexes_write",
]

_CODE_ATTEMPTS = 5


@dataclass(frozen=True)
class ClaimResult:
    """ok: the booking is confirmed (and durable); otherwise `taken` lists what is not free,
    or `paced_until` says when the buyer may book again (their hourly allowance is spent)."""

    ok: bool
    booking: Booking | None = None
    taken: tuple[Slot, ...] = ()
    paced_until: dt.datetime | None = None


@dataclass(frozen=True)
class HoldResult:
    """ok: the slots are held; else `taken` lists what is not free, or `cooling_until` says
    when this buyer may hold in this room again (they held there for a whole hold time)."""

    ok: bool
    hold: Hold | None = None
    taken: tuple[Slot, ...] = ()
    cooling_until: dt.datetime | None = None


@dataclass(frozen=True)
class CancelResult:
    ok: bool
    outcome: str
    message: Any
    booking: Booking | None = None


def _request_args(request: SlotRequest) -> dict[str, object]:
    """The request as the functions take it: cls, days "3,4", hstart, hend, boxes "1,2"."""
    start, end = request.hours or (0, 0)
    return {
        "cls": request.cls,
        "days": ",".join(str(d) for d in request.days),
        "hstart": str(start),
        "hend": str(end),
        "boxes": ",".join(str(b) for b in request.boxes),
    }


def _check_id(kind: str, value: str, room: int) -> None:
    if booking_id_room(value) != room:
        raise ValueError(f"{kind} {value!r} is not an id of room {room}")


def _recheck(request: SlotRequest, now: dt.datetime | None) -> None:
    if not isinstance(request, SlotRequest):
        raise TypeError("request must be a SlotRequest (use slot_request_parse)")
    # The request may have been parsed before midnight: the day-ahead rule holds at claim time.
    errors = check_dates(request.dates, now) + check_size(request)
    if errors:
        raise InvalidRequest(errors)


def _refuse_invalid(function: str, reply: list[Any]) -> None:
    # The function refused a malformed request before any write: a SlotRequest built by hand.
    if reply[0] == "invalid":
        raise ValueError(f"{function} refused a malformed request ({reply[1]})")


PACE_WINDOW_MS = 3_600_000


def booking_pace(
    *, client: redis.Redis, owner_id: str, booking_id: str, now: dt.datetime | None = None
) -> dt.datetime | None:
    """Count a new booking against the buyer's hourly allowance
    (STRONGROOM_BOOKINGS_PER_HOUR): None if it may go ahead (a retry of the same booking id is
    not counted again), else when the buyer may book again. One round trip, in the buyer's own
    slot; checked before the claim, so a refused booking writes nothing else."""
    check_owner_id(owner_id)
    again = window_gate(
        client=client,
        key=pace_of(owner_id),
        limit=settings.STRONGROOM_BOOKINGS_PER_HOUR,
        window_ms=PACE_WINDOW_MS,
        at_ms=to_ms(now) if now is not None else None,
        event_id=booking_id,
    )
    return from_ms(again) if again else None


def booking_pace_return(*, client: redis.Redis, owner_id: str, booking_id: str) -> None:
    """Take a refused booking back out of the buyer's allowance: only bookings made count,
    and a refused request leaves nothing behind."""
    client.zrem(pace_of(owner_id), booking_id)


def booking_claim(
    *,
    client: redis.Redis,
    owner_id: str,
    request: SlotRequest,
    booking_id: str,
    hold_id: str | None = None,
    now: dt.datetime | None = None,
    paced: bool = False,
) -> ClaimResult:
    """Take every slot of `request` for `owner_id`, or nothing; a retry with the same
    `booking_id` returns the same booking. A `hold_id` of the same owner is converted.
    `paced` (a buyer's own booking, not staff or a script): the booking counts against the
    buyer's hourly allowance (STRONGROOM_BOOKINGS_PER_HOUR). On one server the claim function
    counts it itself, only when it books; on a cluster the buyer's pace lives in their own
    slot, so `booking_pace` counts it first (one more round trip) and a refused claim gives
    the entry back (one more again)."""
    check_owner_id(owner_id)
    _recheck(request, now)
    _check_id("booking id", booking_id, request.room)
    if hold_id:
        _check_id("hold id", hold_id, request.room)
    inline = indexes_inline(client)
    paced_first = paced and not inline
    if paced_first:
        again = booking_pace(client=client, owner_id=owner_id, booking_id=booking_id, now=now)
        if again is not None:
            return ClaimResult(False, paced_until=again)
    room = RoomKeys(request.room)
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    keys = {
        "inventory": room.inventory(request.cls),
        "registry": room.registry,
        "record": room.record(booking_id),
        "ledger": room.ledger,
        "codes": room.codes,
        "holds": room.holds,
        "audit": room.audit,
        "stats": room.stats,
        "hold_days": room.hold_days,
        "unindexed": room.unindexed,
        "refs": room.refs,
        "outbox": room.outbox,
        "hold_streaks": room.hold_streaks,
        "waits": room.waits,
        "wait_notices": room.wait_notices,
    }
    more_keys = [person_index(owner_id), date_index(request.room)] if inline else []
    paced_here = paced and inline
    if paced_here:
        more_keys.append(pace_of(owner_id))
    fixed = {
        "owner": owner_id,
        **_request_args(request),
        "season": season_key(),
        "booking_id": booking_id,
        "now_ms": now_ms,
        "dates": ",".join(d.isoformat() for d in request.dates),
        "hold_id": hold_id or "",
        "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
        "room": format_room(request.room),
        "season_bytes": season_bytes(request.cls),
        "season_days": len(season_days()),
        "made": local_now(from_ms(now_ms)).date().isoformat(),
        "person_score": person_score(request.dates),
        "date_scores": ",".join(
            str(date_score(d, request.cls, request.room)) for d in request.dates
        ),
        "pace_limit": settings.STRONGROOM_BOOKINGS_PER_HOUR if paced_here else 0,
        "pace_window_ms": PACE_WINDOW_MS if paced_here else 0,
    }
    # The code derives from the id (nothing sealed per call); a clash with a live code of the
    # room, about one claim in 10^10, takes the next number.
    for number in range(_CODE_ATTEMPTS):
        code = code_for(booking_id, number)
        args = {**fixed, "code_mac": code_mac(request.room, code), "code_n": number}
        args["reference"] = reference_new(room=request.room)
        call_keys, call_args = CLAIM.call(keys=keys, args=args, more_keys=more_keys)
        reply = durable_fcall(client, CLAIM.name, call_keys, call_args)
        if reply[0] not in ("code_clash", "ref_clash"):
            break
    else:
        raise RuntimeError("no free pickup code after several attempts")
    if reply[0] != "ok" and paced_first:
        booking_pace_return(client=client, owner_id=owner_id, booking_id=booking_id)
    _refuse_invalid(CLAIM.name, reply)
    if reply[0] == "paced":
        return ClaimResult(False, paced_until=from_ms(int(reply[1])))
    if reply[0] == "id_in_use":
        raise ValueError(f"booking id {booking_id!r} belongs to another owner")
    if reply[0] == "taken":
        return ClaimResult(False, taken=tuple(slots_from_reply(reply[1:], request.cls)))
    booking = booking_from_hash(flat_to_dict(reply[1]))
    assert booking is not None
    if not inline:
        indexes_after_claim(client=client, booking=booking)
    if len(reply) > 2 and reply[2]:
        waits_forget(client=client, owner_id=owner_id, room=request.room, members=reply[2])
    sender_wake(room.outbox)  # the receipt is in the room's outbox already
    return ClaimResult(True, booking=booking)


def booking_hold(
    *,
    client: redis.Redis,
    owner_id: str,
    request: SlotRequest,
    hold_id: str,
    ttl_seconds: int | None = None,
    now: dt.datetime | None = None,
) -> HoldResult:
    """Keep the request's slots for `owner_id` for `ttl_seconds` (default
    STRONGROOM_HOLD_SECONDS); other buyers' claims and holds see them as taken.

    One live hold per buyer: once this hold is placed it becomes the buyer's (SET ... GET of
    the buyer's pointer, whatever session or worker asks) and the one it replaces is released
    by id; a refused hold changes nothing. Two holds placed at once by one buyer: each releases
    what the pointer held before it, so all but the last one set are released.

    One hold time out of two per room: a buyer's holds in a room end one hold time after their
    first one there (holding again does not extend them), and the hold time after that the room
    is left to everyone else (`cooling_until`); booking there starts afresh."""
    check_owner_id(owner_id)
    _recheck(request, now)
    _check_id("hold id", hold_id, request.room)
    ttl = settings.STRONGROOM_HOLD_SECONDS if ttl_seconds is None else int(ttl_seconds)
    if not 1 <= ttl <= 3600:
        raise ValueError("a hold lasts 1 to 3600 seconds")
    room = RoomKeys(request.room)
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    keys = {
        "inventory": room.inventory(request.cls),
        "holds": room.holds,
        "audit": room.audit,
        "hold_days": room.hold_days,
        "hold_streaks": room.hold_streaks,
    }
    args = {
        "owner": owner_id,
        **_request_args(request),
        "hold_id": hold_id,
        "now_ms": now_ms,
        "ttl_ms": ttl * 1000,
        "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
        "room": format_room(request.room),
        "season_days": len(season_days()),
    }
    # The hold with a read of the buyer's pointer, then (placed) the pointer swapped with the
    # release of the hold it named: two round trips, nothing but the hold function on refusal.
    call_keys, call_args = HOLD.call(keys=keys, args=args)
    pointer = hold_of(owner_id)
    for attempt in (1, 2):
        pipe = client.pipeline(transaction=False)
        pipe.fcall(HOLD.name, len(call_keys), *call_keys, *call_args)
        pipe.get(pointer)
        reply, seen = pipe.execute(raise_on_error=False)
        if isinstance(reply, redis.ResponseError):
            if "Function not found" in str(reply) and attempt == 1:
                load_functions(client)
                continue
            raise reply
        break
    _refuse_invalid(HOLD.name, reply)
    if reply[0] == "id_in_use":
        raise ValueError(f"hold id {hold_id!r} belongs to another owner")
    if reply[0] == "taken":
        return HoldResult(False, taken=tuple(slots_from_reply(reply[1:], request.cls)))
    if reply[0] == "cooling":
        return HoldResult(False, cooling_until=from_ms(reply[1]))
    expires = from_ms(reply[1])
    assert expires is not None
    seen = text_or_none(seen)
    pipe = client.pipeline(transaction=False)
    pipe.set(pointer, hold_id, px=ttl * 1000, get=True)
    if seen and seen != hold_id and booking_id_room(seen) is not None:
        release_keys, release_args = _release_call(owner_id, seen)
        pipe.fcall(HOLD_RELEASE.name, len(release_keys), *release_keys, *release_args)
    previous = text_or_none(pipe.execute()[0])
    if previous and previous not in (seen, hold_id):
        # Another hold of this buyer was placed between our two round trips: it goes too.
        booking_hold_release(client=client, owner_id=owner_id, hold_id=previous)
    return HoldResult(True, hold=Hold(hold_id, owner_id, request, expires))


def booking_hold_release(*, client: redis.Redis, owner_id: str, hold_id: str) -> bool:
    """Give a hold back before it expires; False if it was not this owner's live hold."""
    room = booking_id_room(hold_id)
    if room is None:
        return False
    return bool(fcall(client, HOLD_RELEASE.name, *_release_call(owner_id, hold_id)))


def _release_call(owner_id: str, hold_id: str) -> tuple[list[str], list[object]]:
    """KEYS and ARGV of booking_hold_release (the hold id names its room)."""
    keys = RoomKeys(booking_id_room(hold_id) or 0)
    return HOLD_RELEASE.call(
        keys={"holds": keys.holds, "hold_days": keys.hold_days},
        args={"hold_id": hold_id, "owner": owner_id},
    )


def holds_release_of(*, client: redis.Redis, owner_id: str) -> bool:
    """Give back the buyer's live hold, if any (at logout). True if one was released."""
    held = text_or_none(client.getdel(hold_of(owner_id)))
    if not held:
        return False
    return booking_hold_release(client=client, owner_id=owner_id, hold_id=held)


_CANCEL_MESSAGES = {
    "cancelled": _("The booking is cancelled; its treasures are free again."),
    "already_cancelled": _("This booking was already cancelled."),
    "not_found": _("There is no such booking."),
    "forbidden": _("You can only cancel your own bookings."),
    "collected": _("This booking has been collected and can no longer be cancelled."),
    "started": _("Bookings can be cancelled only before their first day; ask the staff."),
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
) -> CancelResult:
    """Cancel a booking: the owner before its first day, staff any time before collection.

    `request_id` (made by the caller, e.g. carried by the confirmation form) lets a repeat of
    the same request, a double click or a retry, answer "cancelled" again rather than
    "already cancelled"; without one, each call makes its own (redis-py retries stay safe)."""
    room = booking_id_room(booking_id)
    if room is None or not isinstance(actor_id, str) or not actor_id:
        return CancelResult(False, "not_found", _CANCEL_MESSAGES["not_found"])
    request_id = request_id if request_id_valid(request_id) else request_id_new()
    keys = RoomKeys(room)
    today = local_now(now).date().isoformat()
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    reason = reason_clean(reason)
    for _attempt in range(3):
        cls, season = text_values(client.hmget(keys.record(booking_id), ["cls", "season"]))
        if cls is None:
            return CancelResult(False, "not_found", _CANCEL_MESSAGES["not_found"])
        call = CANCEL.call(
            keys={
                "record": keys.record(booking_id),
                "inventory": keys.inventory(cls, season),
                "registry": keys.registry,
                "audit": keys.audit,
                "stats": keys.stats,
                "outbox": keys.outbox,
                "waits": keys.waits,
                "wait_notices": keys.wait_notices,
                "holds": keys.holds,
                "hold_days": keys.hold_days,
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
            },
        )
        reply = durable_fcall(client, CANCEL.name, *call)
        if reply[0] != "stale":
            break
    outcome = reply[0]
    booking = booking_from_hash(flat_to_dict(reply[1])) if len(reply) > 1 else None
    if outcome == "cancelled":
        sender_wake(keys.outbox)  # the cancellation, and any waiter's notice, are in it
    return CancelResult(outcome == "cancelled", outcome, _CANCEL_MESSAGES[outcome], booking)
