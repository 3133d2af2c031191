"""Confirming a booking (claim) and the buyer's hourly allowance (pace). The claim is one Redis
Function (booking/lua/booking/) on one room's keys, sent through `durable_fcall` (FCALL +
WAITAOF, one round trip). Where one server holds every key, a claim also writes the person and
date indexes and counts the buyer's hourly allowance in the same call; on a cluster it names the
booking in the room's `unindexed` set, then writes the index entries with the same durability
and only then takes the name out (booking.engine.indexes); the allowance is counted first,
apart."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings

from booking.domain.codes import code_for, code_mac
from booking.domain.formats import request_args
from booking.domain.keys import (
    RoomKeys,
    date_index,
    date_score,
    pace_of,
    person_index,
    person_score,
)
from booking.domain.parser import SlotRequest
from booking.domain.records import (
    Booking,
    Slot,
    booking_from_hash,
    flat_to_dict,
    slots_from_reply,
)
from booking.domain.references import reference_new
from booking.domain.rules import (
    IdRefused,
    check_id,
    check_owner_id,
    first_bookable_day,
    format_room,
    local_now,
)
from booking.engine.indexes import indexes_after_claim, rooms_mark
from booking.engine.pace import PACE_WINDOW_MS, booking_pace, booking_pace_return
from booking.engine.requests import refuse_invalid
from booking.engine.unsure import claim_unsure_mark, marked_from_start, unsure_forget
from booking.engine.waits import waits_forget
from strongroom.calls import FunctionSpec
from strongroom.clock import from_ms, to_ms
from strongroom.decoders import text_hash
from strongroom.durable import NotDurable, WritesPaused, durable_fcall
from strongroom.outbox import sender_wake
from strongroom.store import tags_may_mix

CLAIM = FunctionSpec(
    "booking_claim",
    "CLAIM",
    ("registry", "record", "ledger", "codes", "holds", "audit", "stats",
     "hold_days", "unindexed", "refs", "outbox", "hold_streaks", "waits", "wait_notices",
     "gone", "closures", "edition"),
    ("owner", "cls", "months", "days", "hstart", "hend", "boxes", "booking_id", "now_ms",
     "code_mac", "code_n", "dates", "hold_id", "audit_maxlen", "room", "made",
     "person_score", "date_scores", "reference", "pace_limit", "pace_window_ms", "first_day",
     "mark_unsure", "actor", "audit_note"),
    replies=("ok record fulfilled", "taken *slots", "paced until", "id_in_use", "code_clash",
             "ref_clash", "gone", "closed reason", "waited", "invalid what"),
    key_tails=("inventories", "person_index", "date_index", "pace"),
)  # fmt: skip
# key tails of CLAIM: the inventory of each calendar month of the request (ARGV months names
# them in the same order), then the person index and the date index where one call may write
# them (not on a cluster), then the buyer's pace when the call counts it (pace_limit > 0).


_CODE_ATTEMPTS = 5


@functools.lru_cache(maxsize=1024)
def _room_claim_keys(room: int, prefix: str) -> tuple[tuple[str, str], ...]:
    """The claim's keys of a room but the booking's record: the same for every claim of the
    room, so made once per room (and key prefix, which names them)."""
    return tuple(RoomKeys(room).named(CLAIM.keys, record="").items())


@dataclass(frozen=True)
class ClaimResult:
    """ok: the booking is confirmed (and durable); otherwise `taken` lists what is not free,
    or `paced_until` says when the buyer may book again (their hourly allowance is spent), or
    `gone`: the buyer's account is being deleted (nothing more is booked for them)."""

    ok: bool
    booking: Booking | None = None
    taken: tuple[Slot, ...] = ()
    paced_until: dt.datetime | None = None
    gone: bool = False
    closed: str = ""  # the reason staff closed a slot of the request ('' when none is)
    # Another buyer waits for a slot of it that a hold running out has just freed: the
    # waiting list has it first, for the few minutes the sweep takes to offer it.
    waited: bool = False


def _made_already(client: redis.Redis, owner_id: str, record: str) -> Booking | None:
    """The owner's booking of this id, made by an earlier press of the same form, where writes
    are paused (its primary has no replica following: a read still answers). Raises NotDurable
    for one the store never confirmed: it exists, so "nothing was booked" would be untrue."""
    booking = booking_from_hash(text_hash(client.hgetall(record)))
    if booking is None or booking.owner_id != owner_id:
        return None
    if booking.unsure:
        raise NotDurable("the booking is there, and not confirmed yet")
    return booking


def _refusal_of(unconfirmed: NotDurable) -> dict[str, Any] | None:
    """The claim's answer when the store refused it (the slots taken, the buyer paced...): the
    function wrote nothing, so the wait that fell short confirmed nothing of it and the
    refusal stands (it said "not confirmed yet" while a replica was stalled). None when it
    booked, or may have (no reply known; a code or reference clash is tried again after)."""
    reply = unconfirmed.results[0] if unconfirmed.results else None
    if not isinstance(reply, list) or not reply:
        return None
    answer = CLAIM.answer_of(reply)
    return None if answer["status"] in ("ok", "code_clash", "ref_clash") else answer


def booking_claim(
    *,
    client: redis.Redis,
    owner_id: str,
    request: SlotRequest,
    booking_id: str,
    hold_id: str | None = None,
    now: dt.datetime | None = None,
    paced: bool = False,
    actor_id: str = "",
    audit_note: str = "",
) -> ClaimResult:
    """Take every slot of `request` for `owner_id`, or nothing; a retry with the same
    `booking_id` returns the same booking. A `hold_id` of the same owner is converted.
    `paced` (a buyer's own booking, not staff or a script): the booking counts against the
    buyer's hourly allowance (STRONGROOM_BOOKINGS_PER_HOUR). On one server the claim function
    counts it itself, only when it books; on a cluster the buyer's pace lives in their own
    slot, so `booking_pace` counts it first (one more round trip) and a refused claim gives
    the entry back (one more again). `actor_id` and `audit_note`: who booked, when not the
    buyer (staff acting for them), and what the audit says of it."""
    # Each module once, in this order (docs/architecture.md, "One booking"): the request as
    # read, the rules, the indexes' place, the room's keys, the call's fields; then the call.
    if not isinstance(request, SlotRequest):  # read once, by the parser; never built by hand
        raise TypeError("request must be a SlotRequest (use slot_request_parse)")
    check_owner_id(owner_id)
    check_id("booking id", booking_id, request.room)
    if hold_id:
        check_id("hold id", hold_id, request.room)
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    ruled = {
        "room": format_room(request.room),
        "made": local_now(from_ms(now_ms)).date().isoformat(),
        "first_day": first_bookable_day(now),
    }
    inline = tags_may_mix(client)
    paced_first = paced and not inline
    if paced_first:
        again = booking_pace(client=client, owner_id=owner_id, booking_id=booking_id, now=now)
        if again is not None:
            return ClaimResult(False, paced_until=again)
    paced_here = paced and inline
    room = RoomKeys(request.room)
    keys = dict(_room_claim_keys(request.room, settings.STRONGROOM_KEY_PREFIX))
    keys["record"] = room.record(booking_id)
    inventories, months = room.inventories(request.cls, request.dates)
    tails: dict[str, list[str]] = {"inventories": inventories}
    if inline:
        tails |= {
            "person_index": [person_index(owner_id)],
            "date_index": [date_index(request.room)],
        }
    if paced_here:
        tails["pace"] = [pace_of(owner_id)]
    scores = {
        "person_score": person_score(request.dates),
        "date_scores": ",".join(
            str(date_score(d, request.cls, request.room)) for d in request.dates
        ),
    }
    fixed = {
        "owner": owner_id,
        **request_args(request),
        **ruled,
        **scores,
        "months": months,
        "booking_id": booking_id,
        "now_ms": now_ms,
        "dates": ",".join(d.isoformat() for d in request.dates),
        "hold_id": hold_id or "",
        "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
        "pace_limit": settings.STRONGROOM_BOOKINGS_PER_HOUR if paced_here else 0,
        "pace_window_ms": PACE_WINDOW_MS if paced_here else 0,
        "mark_unsure": 1 if marked_from_start(client, inline=inline) else 0,
        "actor": actor_id,
        "audit_note": audit_note,
    }
    # The code derives from the id (nothing sealed per call); a clash with a live code of the
    # room, about one claim in 10^10, takes the next number.
    # The booking's first durable write (a pace counted first is given back if it is refused).
    sender = functools.partial(durable_fcall, client, first=True)
    try:
        for number in range(_CODE_ATTEMPTS):
            code = code_for(booking_id, number)
            args = {**fixed, "code_mac": code_mac(request.room, code), "code_n": number}
            args["reference"] = reference_new(room=request.room)
            answer = CLAIM.send(sender, keys=keys, args=args, tails=tails)
            if answer["status"] not in ("code_clash", "ref_clash"):
                break
        else:
            raise RuntimeError("no free pickup code after several attempts")
    except WritesPaused:  # nothing sent
        made = _made_already(client, owner_id, keys["record"])
        if made is not None:  # the same form pressed again: its booking, as a retry finds it
            return ClaimResult(True, booking=made)
        if paced_first:  # the hour's allowance is not spent either
            booking_pace_return(client=client, owner_id=owner_id, booking_id=booking_id)
        raise
    except NotDurable as unconfirmed:
        refusal = _refusal_of(unconfirmed)
        if refusal is None:
            # The claim ran (perhaps) and the store could not say it is safe: no page shows it
            # as confirmed until a durable call settles it (the buyer is asked to try again).
            # On a cluster its record keeps the mark it was written with, and its indexes were
            # not written: the list readers write them. On one server it is marked now.
            if inline:
                claim_unsure_mark(client=client, booking_id=booking_id, now=now)
            else:
                rooms_mark(client=client, rooms=[request.room])
            raise
        answer = refusal  # refused before any write: there is nothing to confirm
    status = answer["status"]
    if status != "ok" and paced_first:
        booking_pace_return(client=client, owner_id=owner_id, booking_id=booking_id)
    refuse_invalid(CLAIM.name, answer, request, now)
    if status == "paced":
        return ClaimResult(False, paced_until=from_ms(int(answer["until"])))
    if status == "gone":
        return ClaimResult(False, gone=True)
    if status == "waited":
        return ClaimResult(False, waited=True)
    if status == "closed":
        return ClaimResult(False, closed=str(answer["reason"]))
    if status == "id_in_use":
        raise IdRefused(f"booking id {booking_id!r} belongs to another owner")
    if status == "taken":
        return ClaimResult(False, taken=tuple(slots_from_reply(answer["slots"], request.cls)))
    booking = booking_from_hash(flat_to_dict(answer["record"]))
    assert booking is not None
    # Confirmed durable (its WAITAOF, or a retry's): the mark goes, with the index writes
    # where the claim could not make them, else on its own.
    if not inline:
        indexes_after_claim(client=client, booking=booking)
    elif booking.unsure:
        unsure_forget(client=client, booking_id=booking.id)
    booking = dataclasses.replace(booking, unsure=False)
    if answer["fulfilled"]:
        waits_forget(
            client=client, owner_id=owner_id, room=request.room, members=answer["fulfilled"]
        )
    sender_wake(room.outbox)  # the receipt is in the room's outbox already
    return ClaimResult(True, booking=booking)
