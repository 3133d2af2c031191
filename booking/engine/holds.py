"""Holding slots a while (one live hold per buyer), giving a hold back, and giving back the
buyer's hold at sign-out. Each is one Redis Function on one room's keys."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import redis
from django.conf import settings

from booking.domain.formats import request_args
from booking.domain.keys import (
    RoomKeys,
    hold_of,
    pace_of,
)
from booking.domain.parser import SlotRequest, request_taken_once
from booking.domain.records import (
    Hold,
    Slot,
    slots_from_reply,
)
from booking.domain.rules import (
    booking_id_room,
    check_id,
    check_owner_id,
    day_starts_within,
    first_bookable_day,
    format_room,
)
from booking.engine.pace import PACE_WINDOW_MS, pace_spent_until
from booking.engine.requests import refuse_invalid
from strongroom.calls import FunctionSpec
from strongroom.clock import from_ms, to_ms
from strongroom.decoders import text_or_none
from strongroom.libraries import fcall, pipeline_functions
from strongroom.store import tags_may_mix

HOLD = FunctionSpec(
    "booking_hold",
    "HOLD",
    ("holds", "audit", "hold_days", "hold_streaks", "gone", "closures", "edition", "waits"),
    ("owner", "cls", "days", "hstart", "hend", "boxes", "hold_id", "now_ms", "ttl_ms",
     "audit_maxlen", "room", "months", "pace_limit", "pace_window_ms", "first_day", "day_starts"),
    replies=("ok expiry", "taken *slots", "cooling until", "paced until", "id_in_use", "gone",
             "closed reason", "waited", "invalid what"),
    key_tails=("inventories", "pace"),
)  # fmt: skip
# key tails of HOLD: the inventory of each calendar month of the request (as ARGV months), then
# the buyer's pace where the call checks it (one server, a paced hold).
HOLD_RELEASE = FunctionSpec(
    "booking_hold_release",
    "HOLD_RELEASE",
    ("holds", "hold_days", "edition", "wait_notices"),
    ("hold_id", "owner"),
)


@dataclass(frozen=True)
class HoldResult:
    """ok: the slots are held; else `taken` lists what is not free, or `cooling_until` says
    when this buyer may hold in this room again (they held there for a whole hold time), or
    `paced_until` when they may book (and so hold) again (their hourly allowance is spent)."""

    ok: bool
    hold: Hold | None = None
    taken: tuple[Slot, ...] = ()
    cooling_until: dt.datetime | None = None
    paced_until: dt.datetime | None = None
    gone: bool = False  # the buyer's account is being deleted
    closed: str = ""  # the reason staff closed a slot of the request ('' when none is)
    # Free, but another buyer waits for a slot of it (a hold ran out): it is offered to them
    # first, within seconds, by the waiting list's sweep.
    waited: bool = False


def booking_hold(
    *,
    client: redis.Redis,
    owner_id: str,
    request: SlotRequest,
    hold_id: str,
    ttl_seconds: int | None = None,
    now: dt.datetime | None = None,
    paced: bool = False,
) -> HoldResult:
    """Keep the request's slots for `owner_id` for `ttl_seconds` (default
    STRONGROOM_HOLD_SECONDS); other buyers' claims and holds see them as taken.

    One live hold per buyer: once this hold is placed it becomes the buyer's (SET ... GET of
    the buyer's pointer, whatever session or worker asks) and the one it replaces is released
    by id; a refused hold changes nothing. Two holds placed at once by one buyer: each releases
    what the pointer held before it, so all but the last one set are released.

    One hold time out of two per room: a buyer's holds in a room end one hold time after their
    first one there (holding again does not extend them), and the hold time after that the room
    is left to everyone else (`cooling_until`); booking there starts afresh.

    `paced` (a buyer's own hold): a buyer whose hourly booking allowance is spent may not hold
    either (`paced_until`): on one server the hold function checks it; on a cluster the
    buyer's pace lives in their own slot and is read first (one more round trip)."""
    check_owner_id(owner_id)
    request_taken_once(request)
    check_id("hold id", hold_id, request.room)
    ttl = settings.STRONGROOM_HOLD_SECONDS if ttl_seconds is None else int(ttl_seconds)
    if not 1 <= ttl <= 3600:
        raise ValueError("a hold lasts 1 to 3600 seconds")
    room = RoomKeys(request.room)
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    inventories, months = room.inventories(request.cls, request.dates)
    inline = tags_may_mix(client)
    if paced and not inline:
        spent = pace_spent_until(client=client, owner_id=owner_id, now_ms=now_ms)
        if spent is not None:
            return HoldResult(False, paced_until=spent)
    keys = {
        "holds": room.holds,
        "edition": room.edition,
        "audit": room.audit,
        "hold_days": room.hold_days,
        "hold_streaks": room.hold_streaks,
        "gone": room.gone,
        "closures": room.closures,
        "waits": room.waits,
    }
    args = {
        "owner": owner_id,
        **request_args(request),
        "hold_id": hold_id,
        "now_ms": now_ms,
        "ttl_ms": ttl * 1000,
        "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
        "room": format_room(request.room),
        "months": months,
        "first_day": first_bookable_day(now),
        "day_starts": day_starts_within(ttl * 1000, now),
        "pace_limit": settings.STRONGROOM_BOOKINGS_PER_HOUR if paced and inline else 0,
        "pace_window_ms": PACE_WINDOW_MS if paced and inline else 0,
    }
    tails = {"inventories": inventories}
    if paced and inline:
        tails["pace"] = [pace_of(owner_id)]
    # The hold with a read of the buyer's pointer, then (placed) the pointer swapped with the
    # release of the hold it named: two round trips, nothing but the hold function on refusal.
    call_keys, call_args = HOLD.call(keys=keys, args=args, tails=tails)
    pointer = hold_of(owner_id)
    reply, seen = pipeline_functions(
        client,
        lambda pipe: (
            pipe.fcall(HOLD.name, len(call_keys), *call_keys, *call_args),
            pipe.get(pointer),
        ),
    )
    answer = HOLD.answer_of(reply)
    refuse_invalid(HOLD.name, answer, request, now)
    if answer["status"] == "id_in_use":
        raise ValueError(f"hold id {hold_id!r} belongs to another owner")
    if answer["status"] == "taken":
        return HoldResult(False, taken=tuple(slots_from_reply(answer["slots"], request.cls)))
    if answer["status"] == "closed":
        return HoldResult(False, closed=str(answer["reason"]))
    if answer["status"] == "cooling":
        return HoldResult(False, cooling_until=from_ms(answer["until"]))
    if answer["status"] == "paced":
        return HoldResult(False, paced_until=from_ms(int(answer["until"])))
    if answer["status"] == "gone":
        return HoldResult(False, gone=True)
    if answer["status"] == "waited":
        return HoldResult(False, waited=True)
    expires = from_ms(answer["expiry"])
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
        keys={
            "holds": keys.holds,
            "hold_days": keys.hold_days,
            "edition": keys.edition,
            "wait_notices": keys.wait_notices,
        },
        args={"hold_id": hold_id, "owner": owner_id},
    )


def holds_release_of(*, client: redis.Redis, owner_id: str) -> bool:
    """Give back the buyer's live hold, if any (at logout). True if one was released."""
    held = text_or_none(client.getdel(hold_of(owner_id)))
    if not held:
        return False
    return booking_hold_release(client=client, owner_id=owner_id, hold_id=held)
