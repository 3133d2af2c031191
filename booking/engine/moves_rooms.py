"""Moving a booking to another room (booking/lua/booking/move_rooms.lua; see booking/README.md,
"Moving a booking"): the new room holds the new slots for a pending record, the old room
decides, the new room confirms; `moves_recover` finishes or undoes a move cut off half way."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import redis
from django.conf import settings

from booking.domain.codes import code_for, code_mac
from booking.domain.formats import request_args
from booking.domain.keys import (
    RoomKeys,
    date_index,
    date_member,
    date_score,
    person_index,
    person_score,
)
from booking.domain.parser import SlotRequest
from booking.domain.records import Booking, booking_from_hash, flat_to_dict, slots_from_reply
from booking.domain.rules import (
    booking_id_room,
    first_bookable_day,
    format_room,
    hold_new_id,
    local_now,
    priority_day_starts,
    room_count,
)
from booking.engine.indexes import indexes_after_claim
from booking.engine.moves_calls import MOVE_ABORT, MOVE_COMMIT, MOVE_IN, MOVE_OUT, MOVE_RELEASE
from booking.engine.requests import refuse_invalid
from booking.engine.results import MOVE_MESSAGES, MoveResult
from strongroom.clock import to_ms
from strongroom.decoders import text_hash, text_list, text_or_none, text_values
from strongroom.durable import durable_fcall
from strongroom.outbox import sender_wake
from strongroom.store import tags_may_mix

# A pending record older than this, found by moves_recover, has lost its mover.
RECOVER_AFTER_MS = 30_000


def moved_id(move_id: str, room: int) -> str:
    """The new room's booking id of a move: derived from the move id, so a repeat of the same
    move (a double press, a retry after a crash) names the same pending record."""
    digest = hashlib.sha256(f"strongroom.move|{move_id}".encode()).digest()[:16]
    return f"{format_room(room)}-{base64.b32encode(digest).decode().rstrip('=').lower()}"


def move_rooms(
    client: redis.Redis,
    booking_id: str,
    request: SlotRequest,
    actor_id: str,
    actor_is_staff: bool,
    now: dt.datetime | None,
    move_id: str,
    owner: str,
) -> MoveResult:
    """Across rooms: hold the new slots (a pending record in the new room), let the old room
    decide (it gives the old slots back and points at the new id, or refuses), then confirm
    the new record; after a refusal, let go of the hold. A crash anywhere leaves a pending
    record that `moves_recover` finishes or undoes."""
    old_room = booking_id_room(booking_id)
    assert old_room is not None
    new_id = moved_id(move_id, request.room)
    old, new = RoomKeys(old_room), RoomKeys(request.room)
    now_ms, first_day = to_ms(now or dt.datetime.now(tz=dt.UTC)), first_bookable_day(now)
    held = _move_in(client, new, new_id, booking_id, request, owner, move_id, now_ms, first_day)
    if held["status"] == "taken":
        taken = tuple(slots_from_reply(held["slots"], request.cls))
        return MoveResult(False, "taken", MOVE_MESSAGES["taken"], taken=taken)
    if held["status"] in ("closed", "gone", "moved_away"):
        return MoveResult(False, held["status"], MOVE_MESSAGES[held["status"]])
    refuse_invalid(MOVE_IN.name, held, request, now)
    args = {
        "actor": actor_id,
        "is_staff": "1" if actor_is_staff else "0",
        "today": local_now(now).date().isoformat(),
        "move_id": move_id,
        "to_id": new_id,
        "now_ms": now_ms,
        "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
        "room": format_room(old_room),
        "first_day": first_day,
        "priority_hold_id": hold_new_id(room=old_room),
        "priority_hold_ms": settings.STRONGROOM_WAIT_HOLD_SECONDS * 1000,
        "day_starts": priority_day_starts(now),
        "cls": request.cls,
        "days_n": len(request.dates),
    }
    decided = _move_out(client, old, booking_id, args)
    if decided["status"] != "moved":
        # Refused (or aborted by a recovery): the old room is as it was; the hold goes.
        _move_undo(client, old, new, booking_id, new_id, move_id)
        refuse_invalid(MOVE_OUT.name, decided)
        outcome = decided["status"]
        return MoveResult(False, outcome, MOVE_MESSAGES[outcome])
    old_record = flat_to_dict(decided["record"])
    booking = _move_commit(client, new, new_id, move_id, old_record, now_ms)
    if booking is None:
        return MoveResult(False, "not_found", MOVE_MESSAGES["not_found"])
    sender_wake(new.outbox, old.outbox)
    return MoveResult(True, "moved", MOVE_MESSAGES["moved"], booking)


def _move_out(
    client: redis.Redis, old: RoomKeys, booking_id: str, args: dict[str, Any]
) -> dict[str, Any]:
    """Step 2, the old room's decision; the record's bitmaps read again when they changed
    between their read and the call (the booking moved in its room just then)."""
    keys = {
        "record": old.record(booking_id),
        "registry": old.registry,
        "edition": old.edition,
        "codes": old.codes,
        "ledger": old.ledger,
        "audit": old.audit,
        "stats": old.stats,
        "waits": old.waits,
        "wait_notices": old.wait_notices,
        "holds": old.holds,
        "hold_days": old.hold_days,
        "outbox": old.outbox,
        "gone": old.gone,
        "closures": old.closures,
    }
    for _attempt in range(3):
        inventories = (text_or_none(client.hget(old.record(booking_id), "inv")) or "").split(",")
        call = MOVE_OUT.call(keys=keys, args=args, tails={"inventories": inventories})
        decided = MOVE_OUT.answer_of(durable_fcall(client, MOVE_OUT.name, *call))
        if decided["status"] != "stale":
            break
    return decided


def _move_in(
    client: redis.Redis,
    new: RoomKeys,
    new_id: str,
    from_id: str,
    request: SlotRequest,
    owner: str,
    move_id: str,
    now_ms: int,
    first_day: int,
) -> dict[str, Any]:
    inventories, months = new.inventories(request.cls, request.dates)
    keys = {
        "record": new.record(new_id),
        "registry": new.registry,
        "edition": new.edition,
        "codes": new.codes,
        "holds": new.holds,
        "hold_days": new.hold_days,
        "stats": new.stats,
        "moves": new.moves,
        "ledger": new.ledger,
        "closures": new.closures,
        "gone": new.gone,
    }
    args = {
        "owner": owner,
        **request_args(request),
        "months": months,
        "dates": ",".join(d.isoformat() for d in request.dates),
        "booking_id": new_id,
        "from_id": from_id,
        "move_id": move_id,
        "code_mac": code_mac(new.room, code_for(new_id, 0)),
        "now_ms": now_ms,
        "room": format_room(new.room),
        "first_day": first_day,
    }
    call = MOVE_IN.call(keys=keys, args=args, tails={"inventories": inventories})
    answer = MOVE_IN.answer_of(durable_fcall(client, MOVE_IN.name, *call, first=True))
    if answer["status"] == "code_clash":  # one move in 10^10: the buyer presses again
        raise RuntimeError("the new room's pickup code clashed; try the move again")
    return answer


def _move_commit(
    client: redis.Redis,
    new: RoomKeys,
    new_id: str,
    move_id: str,
    old: dict[str, str],
    now_ms: int,
) -> Booking | None:
    """Confirm the pending record with what the booking carries over (reference, creation,
    calendar UIDs), index it, and take the old id out of the lists."""
    previous = booking_from_hash(old)
    assert previous is not None
    record = text_values(client.hmget(new.record(new_id), ["dates", "cls", "owner"]))
    dates = tuple(dt.date.fromisoformat(d) for d in (record[0] or "").split(",") if d)
    inline = tags_may_mix(client)
    carried = "|".join(
        [
            previous.reference,
            old.get("made", ""),
            str(previous.seq),
            old.get("uid_id") or previous.id,
            old.get("uid_dates") or old.get("dates", ""),
            old.get("created", ""),
        ]
    )
    owner = record[2] or previous.owner_id
    tails = {"person_index": [person_index(owner)], "date_index": [date_index(new.room)]}
    call = MOVE_COMMIT.call(
        keys={
            "record": new.record(new_id),
            "codes": new.codes,
            "ledger": new.ledger,
            "stats": new.stats,
            "edition": new.edition,
            "audit": new.audit,
            "outbox": new.outbox,
            "moves": new.moves,
            "unindexed": new.unindexed,
        },
        args={
            "move_id": move_id,
            "from_fields": carried,
            "now_ms": now_ms,
            "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
            "room": format_room(new.room),
            "person_score": person_score(dates) if dates else 0,
            "date_scores": ",".join(str(date_score(d, record[1], new.room)) for d in dates),
            "actor": old.get("moved_by") or owner,  # who moved it (the buyer, or staff for them)
        },
        tails=tails if inline else {},
    )
    answer = MOVE_COMMIT.answer_of(durable_fcall(client, MOVE_COMMIT.name, *call))
    if answer["status"] != "moved":
        return None
    booking = booking_from_hash(flat_to_dict(answer["record"]))
    assert booking is not None
    if not inline:
        indexes_after_claim(client=client, booking=booking)
    pipe = client.pipeline(transaction=False)
    pipe.zrem(person_index(previous.owner_id), previous.id)
    pipe.zrem(date_index(previous.room), *(date_member(previous.id, d) for d in previous.dates))
    pipe.execute()
    return booking


def move_finish(
    *, client: redis.Redis, old: dict[str, str], new: dict[str, str], now: dt.datetime | None = None
) -> Booking | None:
    """Confirm the pending record `new` that the old room already decided for (`old`, its
    record, points at it): what the mover does after the old room's call, done by whoever
    reads it first (a reader between the two calls, or after the mover died), so the booking
    is never missing. The call recognises a repeat. None if `new` is not that move's."""
    new_id, move_id = new.get("id", ""), new.get("move_request", "")
    room = booking_id_room(new_id)
    if room is None or not move_id or old.get("moved_to") != new_id:
        return None
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    booking = _move_commit(client, RoomKeys(room), new_id, move_id, old, now_ms)
    sender_wake(RoomKeys(room).outbox)
    return booking


def _move_undo(
    client: redis.Redis, old: RoomKeys, new: RoomKeys, old_id: str, new_id: str, move_id: str
) -> None:
    """Fence the move off in the old room (so a late step 2 cannot run), then let go of the
    new room's hold."""
    abort = MOVE_ABORT.call(
        keys={"record": old.record(old_id), "edition": old.edition}, args={"move_id": move_id}
    )
    if durable_fcall(client, MOVE_ABORT.name, *abort)[0] == "moved":
        raise AssertionError("a move the old room confirmed is never undone")
    cls, inventories = text_values(client.hmget(new.record(new_id), ["cls", "inv"]))
    if cls is None:
        return
    release = MOVE_RELEASE.call(
        keys={
            "record": new.record(new_id),
            "registry": new.registry,
            "edition": new.edition,
            "stats": new.stats,
            "moves": new.moves,
        },
        args={"move_id": move_id},
        tails={"inventories": (inventories or "").split(",")},
    )
    durable_fcall(client, MOVE_RELEASE.name, *release)


def moves_recover(
    *, client: redis.Redis, rooms: Sequence[int] | None = None, now: dt.datetime | None = None
) -> int:
    """Finish or undo the moves cut off half way (a pending record older than
    RECOVER_AFTER_MS): the old room decides (booking_move_abort answers "moved" if the move
    got that far, else fences it off), then the new record is confirmed or let go. Returns
    how many were settled. Safe to run any time, anywhere, twice."""
    rooms = list(rooms) if rooms is not None else list(range(1, room_count() + 1))
    before = to_ms(now or dt.datetime.now(tz=dt.UTC)) - RECOVER_AFTER_MS
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.zrangebyscore(RoomKeys(room).moves, "-inf", before)
    settled = 0
    for room, ids in zip(rooms, pipe.execute(), strict=True):
        settled += sum(_settle(client, RoomKeys(room), new_id) for new_id in text_list(ids))
    return settled


def moves_settle_into(
    *, client: redis.Redis, rooms: Sequence[int], covers: Callable[[Booking], bool]
) -> int:
    """Settle now every move under way into `rooms` whose slots `covers` (a closure just
    written; the lists in one round trip): finished if its old room decided, else stopped."""
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.zrange(RoomKeys(room).moves, 0, -1)
    settled = 0
    for room, ids in zip(rooms, pipe.execute(), strict=True):
        new = RoomKeys(room)
        for new_id in text_list(ids):
            pending = booking_from_hash(text_hash(client.hgetall(new.record(new_id))))
            if pending is not None and covers(pending):
                settled += _settle(client, new, new_id)
    return settled


def _settle(client: redis.Redis, new: RoomKeys, new_id: str) -> bool:
    """One pending record: its old room decides, then it is confirmed or let go (False: none)."""
    move_id, old_id, status = text_values(
        client.hmget(new.record(new_id), ["move_request", "moved_from", "status"])
    )
    old_room = booking_id_room(old_id)
    if move_id is None or old_id is None or old_room is None or status != "pending":
        client.zrem(new.moves, new_id)
        return False
    old = RoomKeys(old_room)
    abort = MOVE_ABORT.call(
        keys={"record": old.record(old_id), "edition": old.edition}, args={"move_id": move_id}
    )
    if durable_fcall(client, MOVE_ABORT.name, *abort)[0] == "moved":
        old_record = text_hash(client.hgetall(old.record(old_id)))
        _move_commit(client, new, new_id, move_id, old_record, to_ms(dt.datetime.now(tz=dt.UTC)))
    else:
        _move_undo(client, old, new, old_id, new_id, move_id)
    return True


def moves_sweep(client: redis.Redis) -> None:
    """The sender's full pass settles moves cut off half way (see `moves_recover`; plugged in
    by booking/apps.py)."""
    moves_recover(client=client)
