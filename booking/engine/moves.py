"""Moving a booking to other slots of its class (the buyer, or staff for them): the new slots are
taken and the old given back together, or nothing changes. Within a room that is one Redis
Function (booking_move, durable: FCALL + WAITAOF). The booking keeps its id and reference, gets
a new pickup code (the old one stops opening), and its calendar events keep their UIDs with a
higher SEQUENCE; the buyer is told by mail (the room's outbox, written by the function)."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from booking.domain.codes import code_for, code_mac
from booking.domain.keys import (
    RoomKeys,
    date_index,
    date_member,
    date_score,
    person_index,
    person_score,
)
from booking.domain.parser import SlotRequest, slot_request_parse
from booking.domain.records import Booking, Slot, booking_from_hash, flat_to_dict, slots_from_reply
from booking.domain.rules import (
    booking_id_room,
    first_bookable_day,
    format_room,
    hold_new_id,
    local_now,
    request_id_new,
    request_id_valid,
    room_count,
    season_days,
    season_key,
)
from booking.engine.audit import audit_write
from booking.engine.bookings import booking_get
from booking.engine.indexes import indexes_after_claim, indexes_inline
from booking.engine.requests import refuse_invalid, request_args, request_recheck
from strongroom.calls import FunctionSpec
from strongroom.clock import to_ms
from strongroom.outbox import mail_queue, sender_wake
from strongroom.store import durable_fcall, text_hash, text_values

MOVE = FunctionSpec(
    "booking_move",
    "MOVE",
    ("record", "inventory", "registry", "codes", "holds", "hold_days", "audit", "stats",
     "outbox", "waits", "wait_notices", "unindexed"),
    ("actor", "is_staff", "today", "cls", "days", "hstart", "hend", "boxes", "dates",
     "season_days", "code_mac", "code_n", "move_id", "now_ms", "audit_maxlen", "room",
     "person_score", "date_scores", "first_day", "priority_hold_id", "priority_hold_ms"),
    replies=("moved record", "taken *slots", "not_found", "forbidden", "cancelled", "collected",
             "started", "unchanged", "code_clash", "invalid what"),
    key_tails=("person_index", "date_index"),  # where one call may write them (one server)
)  # fmt: skip

# Across rooms (booking/lua/booking/move_rooms.lua): the new room holds, the old room decides.
MOVE_IN = FunctionSpec(
    "booking_move_in",
    "MOVE_IN",
    ("record", "inventory", "registry", "codes", "holds", "hold_days", "stats", "moves",
     "ledger"),
    ("owner", "cls", "season", "days", "hstart", "hend", "boxes", "dates", "season_days",
     "booking_id", "from_id", "move_id", "code_mac", "now_ms", "room"),
    replies=("held", "taken *slots", "code_clash", "invalid what"),
)  # fmt: skip
MOVE_OUT = FunctionSpec(
    "booking_move_out",
    "MOVE_OUT",
    ("record", "inventory", "registry", "codes", "ledger", "audit", "stats", "waits",
     "wait_notices", "holds", "hold_days", "outbox"),
    ("actor", "is_staff", "today", "move_id", "to_id", "now_ms", "audit_maxlen", "room",
     "first_day", "priority_hold_id", "priority_hold_ms"),
    replies=("moved record", "aborted", "not_found", "forbidden", "cancelled", "collected",
             "started", "invalid what"),
)  # fmt: skip
MOVE_COMMIT = FunctionSpec(
    "booking_move_commit",
    "MOVE_COMMIT",
    ("record", "codes", "ledger", "stats", "audit", "outbox", "moves", "unindexed"),
    ("move_id", "from_fields", "now_ms", "audit_maxlen", "room", "person_score", "date_scores"),
    replies=("moved record", "not_found", "invalid what"),
    key_tails=("person_index", "date_index"),
)  # fmt: skip
MOVE_ABORT = FunctionSpec(
    "booking_move_abort", "MOVE_ABORT", ("record",), ("move_id",), replies=("moved", "aborted")
)
MOVE_RELEASE = FunctionSpec(
    "booking_move_release",
    "MOVE_RELEASE",
    ("record", "inventory", "registry", "stats", "moves"),
    ("move_id",),
    replies=("released", "moved"),
)
# A pending record older than this, found by moves_recover, has lost its mover.
RECOVER_AFTER_MS = 30_000

_CODE_ATTEMPTS = 5


@dataclass(frozen=True)
class MoveResult:
    """ok: the booking now has the new slots (and a new code); otherwise it is as it was, and
    `taken` lists what is not free."""

    ok: bool
    outcome: str
    message: Any
    booking: Booking | None = None
    taken: tuple[Slot, ...] = ()


MOVE_MESSAGES = {
    "moved": _("The booking is moved. It has a new pickup code: the old one no longer opens."),
    "taken": _("Some of the new slots are not free: the booking is unchanged."),
    "not_found": _("There is no such booking."),
    "forbidden": _("You can only move your own bookings."),
    "cancelled": _("This booking was cancelled and cannot be moved."),
    "collected": _("This booking has been collected and can no longer be moved."),
    "started": _("A booking can be moved only before its first day."),
    "unchanged": _("These are the booking's own slots already."),
    "other_class": _("A booking moves to slots of its own class, as many days as it has."),
}


def move_form_values(booking: Booking, data: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a move form (templates/booking/_move_form.html) shows: the booking's slots, or what
    was posted (`data`, a QueryDict: a refused move keeps the choice)."""
    start, end = booking.hours or (0, 0)
    if data is None:
        return {
            "move_id": request_id_new(),
            "form_room": booking.room_label,
            "form_dates": [d.isoformat() for d in booking.dates],
            "form_start": str(start),
            "form_end": str(end),
            "form_boxes": ", ".join(str(b) for b in booking.boxes),
            "starts": [str(h) for h in range(24)],
            "ends": [str(h) for h in range(1, 25)],
        }
    dates = data.getlist("date")[:64] if hasattr(data, "getlist") else []
    return {
        "move_id": str(data.get("move_id", ""))[:64],
        "form_room": str(data.get("room", ""))[:8],
        "form_dates": [str(d)[:20] for d in dates],
        "form_start": str(data.get("hour_start", ""))[:5],
        "form_end": str(data.get("hour_end", ""))[:5],
        "form_boxes": str(data.get("boxes", ""))[:400],
        "starts": [str(h) for h in range(24)],
        "ends": [str(h) for h in range(1, 25)],
    }


def move_request(
    *,
    booking: Booking,
    dates: list[str],
    hour_start: object = None,
    hour_end: object = None,
    boxes: str = "",
    room: object = None,
    now: dt.datetime | None = None,
) -> SlotRequest:
    """The slots a move form asks for: the booking's class, the room (its own if none), the
    dates, hours and boxes typed ("5, 6"); raises InvalidRequest naming every problem (as a
    booking form)."""
    picked = [part.strip() for part in boxes.replace("，", ",").split(",") if part.strip()]
    return slot_request_parse(
        cls=booking.cls,
        room=booking.room if room is None or room == "" else room,
        dates=[d for d in dates if d.strip()][:64],
        hour_start=hour_start if booking.cls != "A" else None,
        hour_end=hour_end if booking.cls != "A" else None,
        boxes=picked[:101] if booking.cls == "C" else None,
        now=now,
    )


def booking_move(
    *,
    client: redis.Redis,
    booking_id: str,
    request: SlotRequest,
    actor_id: str,
    actor_is_staff: bool,
    now: dt.datetime | None = None,
    move_id: str | None = None,
) -> MoveResult:
    """Move a booking to the slots of `request` (same class, as many days; the one-day-ahead
    rule on the new days, the cancellation cut-off on the old), or leave it as it was.
    `move_id` (client-made, e.g. carried by the form) makes a repeat answer "moved" again."""
    room = booking_id_room(booking_id)
    if room is None or not isinstance(actor_id, str) or not actor_id:
        return MoveResult(False, "not_found", MOVE_MESSAGES["not_found"])
    request_recheck(request, now)
    move_id = move_id if move_id and request_id_valid(move_id) else request_id_new()
    keys = RoomKeys(room)
    cls, season, owner, code_n, before = text_values(
        client.hmget(keys.record(booking_id), ["cls", "season", "owner", "code_n", "dates"])
    )
    if cls is None or owner is None:
        return MoveResult(False, "not_found", MOVE_MESSAGES["not_found"])
    if owner != actor_id and not actor_is_staff:
        return MoveResult(False, "forbidden", MOVE_MESSAGES["forbidden"])
    if request.cls != cls:
        return MoveResult(False, "other_class", MOVE_MESSAGES["other_class"])
    if request.room != room:
        return _move_rooms(
            client, booking_id, request, actor_id, actor_is_staff, now, move_id, owner, season
        )
    inline = indexes_inline(client)
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    call_keys = {
        "record": keys.record(booking_id),
        "inventory": keys.inventory(cls, season),
        "registry": keys.registry,
        "codes": keys.codes,
        "holds": keys.holds,
        "hold_days": keys.hold_days,
        "audit": keys.audit,
        "stats": keys.stats,
        "outbox": keys.outbox,
        "waits": keys.waits,
        "wait_notices": keys.wait_notices,
        "unindexed": keys.unindexed,
    }
    tails = {"person_index": [person_index(owner)], "date_index": [date_index(room)]}
    fixed = {
        "actor": actor_id,
        "is_staff": "1" if actor_is_staff else "0",
        "today": local_now(now).date().isoformat(),
        **request_args(request),
        "dates": ",".join(d.isoformat() for d in request.dates),
        "season_days": len(season_days()),
        "move_id": move_id,
        "now_ms": now_ms,
        "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
        "room": format_room(room),
        "person_score": person_score(request.dates),
        "date_scores": ",".join(str(date_score(d, cls, room)) for d in request.dates),
        "first_day": first_bookable_day(now),
        "priority_hold_id": hold_new_id(room=room),
        "priority_hold_ms": settings.STRONGROOM_WAIT_HOLD_SECONDS * 1000,
    }
    first = int(code_n) + 1 if code_n and code_n.lstrip("-").isdigit() else 0
    for number in range(max(first, 0), max(first, 0) + _CODE_ATTEMPTS):
        code = code_for(booking_id, number)
        args = {**fixed, "code_mac": code_mac(room, code), "code_n": number}
        call = MOVE.call(keys=call_keys, args=args, tails=tails if inline else {})
        answer = MOVE.answer_of(durable_fcall(client, MOVE.name, *call))
        if answer["status"] != "code_clash":
            break
    else:
        raise RuntimeError("no free pickup code after several attempts")
    if answer["status"] == "invalid" and answer["what"] == "class":
        return MoveResult(False, "other_class", MOVE_MESSAGES["other_class"])
    refuse_invalid(MOVE.name, answer)
    outcome = answer["status"]
    if outcome == "taken":
        taken = tuple(slots_from_reply(answer["slots"], cls))
        return MoveResult(False, outcome, MOVE_MESSAGES[outcome], taken=taken)
    if outcome != "moved":
        return MoveResult(False, outcome, MOVE_MESSAGES[outcome])
    booking = booking_from_hash(flat_to_dict(answer["record"]))
    assert booking is not None
    if not inline:
        _reindex(client, booking, before or "")
    sender_wake(keys.outbox)  # the buyer's mail is in the room's outbox already
    return MoveResult(True, outcome, MOVE_MESSAGES[outcome], booking)


def _reindex(client: redis.Redis, booking: Booking, before: str) -> None:
    """On a cluster: the moved booking's index entries (its new dates, then out of
    `unindexed`), and its old days' date-index entries removed (a crash before that leaves
    stale entries, which `bookings_between` reads past: it keeps a booking by its own dates)."""
    indexes_after_claim(client=client, booking=booking)
    old = {dt.date.fromisoformat(d) for d in before.split(",") if d} - set(booking.dates)
    if old:
        client.zrem(date_index(booking.room), *(date_member(booking.id, d) for d in old))


def _moved_id(move_id: str, room: int) -> str:
    """The new room's booking id of a move: derived from the move id, so a repeat of the same
    move (a double press, a retry after a crash) names the same pending record."""
    digest = hashlib.sha256(f"strongroom.move|{move_id}".encode()).digest()[:16]
    return f"{format_room(room)}-{base64.b32encode(digest).decode().rstrip('=').lower()}"


def _move_rooms(
    client: redis.Redis,
    booking_id: str,
    request: SlotRequest,
    actor_id: str,
    actor_is_staff: bool,
    now: dt.datetime | None,
    move_id: str,
    owner: str,
    season: str | None,
) -> MoveResult:
    """Across rooms: hold the new slots (a pending record in the new room), let the old room
    decide (it gives the old slots back and points at the new id, or refuses), then confirm
    the new record; after a refusal, let go of the hold. A crash anywhere leaves a pending
    record that `moves_recover` finishes or undoes."""
    old_room = booking_id_room(booking_id)
    assert old_room is not None
    new_id = _moved_id(move_id, request.room)
    old, new = RoomKeys(old_room), RoomKeys(request.room)
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    held = _move_in(client, new, new_id, booking_id, request, owner, move_id, now_ms)
    if held["status"] == "taken":
        taken = tuple(slots_from_reply(held["slots"], request.cls))
        return MoveResult(False, "taken", MOVE_MESSAGES["taken"], taken=taken)
    refuse_invalid(MOVE_IN.name, held)
    call = MOVE_OUT.call(
        keys={
            "record": old.record(booking_id),
            "inventory": old.inventory(request.cls, season),
            "registry": old.registry,
            "codes": old.codes,
            "ledger": old.ledger,
            "audit": old.audit,
            "stats": old.stats,
            "waits": old.waits,
            "wait_notices": old.wait_notices,
            "holds": old.holds,
            "hold_days": old.hold_days,
            "outbox": old.outbox,
        },
        args={
            "actor": actor_id,
            "is_staff": "1" if actor_is_staff else "0",
            "today": local_now(now).date().isoformat(),
            "move_id": move_id,
            "to_id": new_id,
            "now_ms": now_ms,
            "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
            "room": format_room(old_room),
            "first_day": first_bookable_day(now),
            "priority_hold_id": hold_new_id(room=old_room),
            "priority_hold_ms": settings.STRONGROOM_WAIT_HOLD_SECONDS * 1000,
        },
    )
    decided = MOVE_OUT.answer_of(durable_fcall(client, MOVE_OUT.name, *call))
    if decided["status"] != "moved":
        # Refused (or aborted by a recovery): the old room is as it was; the hold goes.
        _move_undo(client, old, new, booking_id, new_id, move_id)
        refused = decided["status"]
        outcome = "cancelled" if refused in ("aborted", "invalid") else refused
        return MoveResult(False, outcome, MOVE_MESSAGES[outcome])
    old_record = flat_to_dict(decided["record"])
    booking = _move_commit(client, new, new_id, move_id, old_record, now_ms)
    if booking is None:
        return MoveResult(False, "not_found", MOVE_MESSAGES["not_found"])
    sender_wake(new.outbox, old.outbox)
    return MoveResult(True, "moved", MOVE_MESSAGES["moved"], booking)


def _move_in(
    client: redis.Redis,
    new: RoomKeys,
    new_id: str,
    from_id: str,
    request: SlotRequest,
    owner: str,
    move_id: str,
    now_ms: int,
) -> dict[str, Any]:
    keys = {
        "record": new.record(new_id),
        "inventory": new.inventory(request.cls),
        "registry": new.registry,
        "codes": new.codes,
        "holds": new.holds,
        "hold_days": new.hold_days,
        "stats": new.stats,
        "moves": new.moves,
        "ledger": new.ledger,
    }
    args = {
        "owner": owner,
        **request_args(request),
        "season": season_key(),
        "dates": ",".join(d.isoformat() for d in request.dates),
        "season_days": len(season_days()),
        "booking_id": new_id,
        "from_id": from_id,
        "move_id": move_id,
        "code_mac": code_mac(new.room, code_for(new_id, 0)),
        "now_ms": now_ms,
        "room": format_room(new.room),
    }
    call = MOVE_IN.call(keys=keys, args=args)
    answer = MOVE_IN.answer_of(durable_fcall(client, MOVE_IN.name, *call))
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
    inline = indexes_inline(client)
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


def _move_undo(
    client: redis.Redis, old: RoomKeys, new: RoomKeys, old_id: str, new_id: str, move_id: str
) -> None:
    """Fence the move off in the old room (so a late step 2 cannot run), then let go of the
    new room's hold."""
    abort = MOVE_ABORT.call(keys={"record": old.record(old_id)}, args={"move_id": move_id})
    if durable_fcall(client, MOVE_ABORT.name, *abort)[0] == "moved":
        raise AssertionError("a move the old room confirmed is never undone")
    record = text_values(client.hmget(new.record(new_id), ["cls", "season"]))
    cls, season = record
    if cls is None:
        return
    release = MOVE_RELEASE.call(
        keys={
            "record": new.record(new_id),
            "inventory": new.inventory(cls, season),
            "registry": new.registry,
            "stats": new.stats,
            "moves": new.moves,
        },
        args={"move_id": move_id},
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
        new = RoomKeys(room)
        for new_id in ids:
            fields = text_values(
                client.hmget(new.record(new_id), ["move_request", "moved_from", "status"])
            )
            move_id, old_id, status = fields
            old_room = booking_id_room(old_id)
            if move_id is None or old_id is None or old_room is None or status != "pending":
                client.zrem(new.moves, new_id)
                continue
            old = RoomKeys(old_room)
            abort = MOVE_ABORT.call(keys={"record": old.record(old_id)}, args={"move_id": move_id})
            if durable_fcall(client, MOVE_ABORT.name, *abort)[0] == "moved":
                old_record = text_hash(client.hgetall(old.record(old_id)))
                _move_commit(
                    client, new, new_id, move_id, old_record, to_ms(dt.datetime.now(tz=dt.UTC))
                )
            else:
                _move_undo(client, old, new, old_id, new_id, move_id)
            settled += 1
    return settled


def moves_sweep(client: redis.Redis) -> None:
    """The sender's full pass settles moves cut off half way (see `moves_recover`; plugged in
    by booking/apps.py)."""
    moves_recover(client=client)


def receipt_resend(*, client: redis.Redis, booking_id: str, actor_id: str) -> Booking | None:
    """Queue the receipt of a confirmed booking again (code and .ics, in the buyer's language;
    the outbox renders it as it is now) and audit who asked. None when there is no such
    confirmed booking."""
    booking = booking_get(client=client, booking_id=booking_id)
    if booking is None or booking.status != "confirmed":
        return None
    mail_queue(client, kind="confirm", args=(booking.id, booking.owner_id))
    audit_write(
        client=client,
        room=booking.room,
        kind="receipt",
        actor=actor_id,
        booking_id=booking.id,
        detail="sent again",
    )
    return booking
