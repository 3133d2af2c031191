"""Moving a booking to other slots of its class (the buyer, or staff for them): the new slots are
taken and the old given back together, or nothing changes. Within a room that is one Redis
Function (booking_move, durable: FCALL + WAITAOF). The booking keeps its id and reference, gets
a new pickup code (the old one stops opening), and its calendar events keep their UIDs with a
higher SEQUENCE; the buyer is told by mail (the room's outbox, written by the function)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable, Mapping
from typing import Any

import redis
from django.conf import settings
from django.utils.translation import gettext as _

from accounts.selectors import mail_target
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
from booking.domain.parser import InvalidRequest, SlotRequest, slot_request_parse
from booking.domain.records import Booking, booking_from_hash, flat_to_dict, slots_from_reply
from booking.domain.rules import (
    booking_id_room,
    first_bookable_day,
    format_room,
    hold_new_id,
    local_now,
    priority_day_starts,
    request_id_new,
    request_id_valid,
    season_end,
    season_start,
    site_today,
)
from booking.engine import moves_rooms
from booking.engine.audit import audit_write
from booking.engine.bookings import booking_get
from booking.engine.indexes import indexes_after_claim, rooms_mark
from booking.engine.requests import refuse_invalid, request_recheck
from booking.engine.results import MOVE_MESSAGES, MoveResult
from booking.engine.unsure import claim_unsure_mark, unsure_forget
from strongroom.calls import FunctionSpec
from strongroom.clock import to_ms
from strongroom.decoders import text_values
from strongroom.durable import NotDurable, durable_fcall
from strongroom.outbox import mail_queue, mail_queue_once, sender_wake
from strongroom.store import tags_may_mix

MOVE = FunctionSpec(
    "booking_move",
    "MOVE",
    ("record", "registry", "codes", "holds", "hold_days", "audit", "stats",
     "outbox", "waits", "wait_notices", "unindexed", "closures", "edition"),
    ("actor", "is_staff", "today", "cls", "days", "hstart", "hend", "boxes", "dates",
     "months", "code_mac", "code_n", "move_id", "now_ms", "audit_maxlen", "room",
     "person_score", "date_scores", "first_day", "priority_hold_id", "priority_hold_ms",
     "day_starts"),
    replies=("moved record", "taken *slots", "not_found", "forbidden", "cancelled", "moved_away",
             "collected", "started", "unchanged", "code_clash", "closed reason", "invalid what"),
    key_tails=("inventories", "person_index", "date_index"),
)  # fmt: skip
# key tails of MOVE: the bitmaps of every calendar month of the booking's days and of the new
# ones (ARGV months names them, in order), then the person index and the date index where one
# call may write them.

_CODE_ATTEMPTS = 5


# The move form's hour choices: (the value posted, as the form's fields hold it; the label).
_HOUR_STARTS = tuple((str(h), f"{h:02d}:00") for h in range(24))
_HOUR_ENDS = tuple((str(h), f"{h:02d}:00") for h in range(1, 25))


def move_form_values(booking: Booking, data: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a move form (templates/booking/_move_form.html) shows: the booking's slots, or what
    was posted (`data`, a QueryDict: a refused move keeps the choice)."""
    start, end = booking.hours or (0, 0)
    bounds = {  # the days a move may go to: from tomorrow (or the season's first) to its last
        "date_min": max(site_today() + dt.timedelta(days=1), season_start()).isoformat(),
        "date_max": season_end().isoformat(),
    }
    if data is None:
        return {
            **bounds,
            "move_id": request_id_new(),
            "form_room": booking.room_label,
            "form_dates": [d.isoformat() for d in booking.dates],
            "form_start": str(start),
            "form_end": str(end),
            "form_boxes": ", ".join(str(b) for b in booking.boxes),
            "starts": _HOUR_STARTS,
            "ends": _HOUR_ENDS,
        }
    dates = data.getlist("date")[:64] if hasattr(data, "getlist") else []
    return {
        **bounds,
        "move_id": str(data.get("move_id", ""))[:64],
        "form_room": str(data.get("room", ""))[:8],
        "form_dates": [str(d)[:20] for d in dates],
        "form_start": str(data.get("hour_start", ""))[:5],
        "form_end": str(data.get("hour_end", ""))[:5],
        "form_boxes": str(data.get("boxes", ""))[:400],
        "starts": _HOUR_STARTS,
        "ends": _HOUR_ENDS,
    }


def move_request_posted(*, booking: Booking, posted: Any) -> SlotRequest:
    """The slots a posted move form (a QueryDict) asks for (see `move_request`): the buyer's
    page and the staff page read it alike; nothing is cut to fit, too much is refused. Numbers
    are the digits 0-9 only, as on every form (full-width digits are refused, as the booking
    form refuses them); a Chinese keyboard's comma and dash between boxes are read."""
    return move_request(
        booking=booking,
        dates=posted.getlist("date"),
        hour_start=posted.get("hour_start"),
        hour_end=posted.get("hour_end"),
        boxes=str(posted.get("boxes", "") or ""),
        room=str(posted.get("room", "") or ""),
    )


# [0-9], not \d: \d is any script's digits, and int() reads them all.
_BOX_RANGE = re.compile(r"\s*([0-9]{1,3})\s*[-–~～－]\s*([0-9]{1,3})\s*")


def _boxes_typed(text: str) -> list[str]:
    """The boxes typed in a move form, each as typed: numbers apart by commas, and ranges
    ("6-8" is 6, 7, 8); anything else is left as it is, for the parser to name."""
    picked: list[str] = []
    for part in text.replace("，", ",").split(","):
        ranged = _BOX_RANGE.fullmatch(part)
        first, last = (int(ranged.group(1)), int(ranged.group(2))) if ranged else (0, -1)
        if ranged and 1 <= first <= last <= 100:
            picked += [str(box) for box in range(first, last + 1)]
        elif part.strip():
            picked.append(part.strip())
    return picked


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
    dates, hours and boxes typed ("5, 6", "6-8"); raises InvalidRequest naming every problem
    (as a booking form)."""
    picked = _boxes_typed(boxes)
    typed = [d.strip() for d in dates if d.strip()]
    # Read as one day fewer, the same day twice would be "as many days as it has": said as
    # what it is, with every other problem of the form.
    repeated = len(set(typed)) < len(typed)
    twice = [_("The same day is there twice: pick different days.")] if repeated else []
    try:
        parsed = slot_request_parse(
            cls=booking.cls,
            room=booking.room if room is None or room == "" else room,
            dates=typed,
            hour_start=hour_start if booking.cls != "A" else None,
            hour_end=hour_end if booking.cls != "A" else None,
            boxes=picked if booking.cls == "C" else None,
            now=now,
        )
    except InvalidRequest as refused:
        raise InvalidRequest([*twice, *refused.errors]) from None
    if twice:
        raise InvalidRequest(twice)
    return parsed


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
    cls, owner, code_n, before = text_values(
        client.hmget(keys.record(booking_id), ["cls", "owner", "code_n", "dates"])
    )
    if cls is None or owner is None:
        return MoveResult(False, "not_found", MOVE_MESSAGES["not_found"])
    if owner != actor_id and not actor_is_staff:
        return MoveResult(False, "forbidden", MOVE_MESSAGES["forbidden"])
    if request.cls != cls or len(request.dates) != len((before or "").split(",")):
        return MoveResult(False, "other_class", MOVE_MESSAGES["other_class"])
    if request.room != room:
        return _across_rooms(
            client, request.room, move_id, now,
            lambda: moves_rooms.move_rooms(
                client, booking_id, request, actor_id, actor_is_staff, now, move_id, owner
            ),
        )  # fmt: skip
    inline = tags_may_mix(client)
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    call_keys = {
        "record": keys.record(booking_id),
        "registry": keys.registry,
        "edition": keys.edition,
        "codes": keys.codes,
        "holds": keys.holds,
        "hold_days": keys.hold_days,
        "audit": keys.audit,
        "stats": keys.stats,
        "outbox": keys.outbox,
        "waits": keys.waits,
        "wait_notices": keys.wait_notices,
        "unindexed": keys.unindexed,
        "closures": keys.closures,
    }
    old_dates = [dt.date.fromisoformat(d) for d in (before or "").split(",") if d]
    inventories, months = keys.inventories(cls, [*old_dates, *request.dates])
    tails: dict[str, list[str]] = {"inventories": inventories}
    if inline:
        tails |= {"person_index": [person_index(owner)], "date_index": [date_index(room)]}
    fixed = {
        "actor": actor_id,
        "is_staff": "1" if actor_is_staff else "0",
        "today": local_now(now).date().isoformat(),
        **request_args(request),
        "dates": ",".join(d.isoformat() for d in request.dates),
        "months": months,
        "move_id": move_id,
        "now_ms": now_ms,
        "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
        "room": format_room(room),
        "person_score": person_score(request.dates),
        "date_scores": ",".join(str(date_score(d, cls, room)) for d in request.dates),
        "first_day": first_bookable_day(now),
        "priority_hold_id": hold_new_id(room=room),
        "priority_hold_ms": settings.STRONGROOM_WAIT_HOLD_SECONDS * 1000,
        "day_starts": priority_day_starts(now),
    }
    first = int(code_n) + 1 if code_n and code_n.lstrip("-").isdigit() else 0
    try:
        for number in range(max(first, 0), max(first, 0) + _CODE_ATTEMPTS):
            code = code_for(booking_id, number)
            args = {**fixed, "code_mac": code_mac(room, code), "code_n": number}
            call = MOVE.call(keys=call_keys, args=args, tails=tails)
            answer = MOVE.answer_of(durable_fcall(client, MOVE.name, *call, first=True))
            if answer["status"] != "code_clash":
                break
        else:
            raise RuntimeError("no free pickup code after several attempts")
    except NotDurable as exc:
        # A refusal wrote nothing (the function checks all before its first write): there is
        # nothing to confirm, and the buyer gets the refusal. A move that ran is marked.
        ran = exc.results[0] if exc.results else None
        answer = MOVE.answer_of(ran) if ran is not None else {"status": "moved"}
        if answer["status"] in ("moved", "code_clash"):
            if answer["status"] == "moved":
                _unconfirmed(client, booking_id, now)
            raise
    if answer["status"] == "invalid" and answer["what"] == "class":
        return MoveResult(False, "other_class", MOVE_MESSAGES["other_class"])
    refuse_invalid(MOVE.name, answer, request, now)
    outcome = answer["status"]
    if outcome == "taken":
        taken = tuple(slots_from_reply(answer["slots"], cls))
        return MoveResult(False, outcome, MOVE_MESSAGES[outcome], taken=taken)
    if outcome != "moved":
        return MoveResult(False, outcome, MOVE_MESSAGES[outcome])
    booking = booking_from_hash(flat_to_dict(answer["record"]))
    assert booking is not None
    # Its durable call confirmed the booking too: a "not confirmed yet" mark goes (with the
    # index writes on a cluster).
    if not inline:
        _reindex(client, booking, before or "")
    elif booking.unsure:
        unsure_forget(client=client, booking_id=booking.id)
    sender_wake(keys.outbox)  # the buyer's mail is in the room's outbox already
    booking = dataclasses.replace(booking, unsure=False)
    return MoveResult(True, outcome, MOVE_MESSAGES[outcome], booking)


def _across_rooms(
    client: redis.Redis, room: int, move_id: str, now: dt.datetime | None,
    move: Callable[[], MoveResult],
) -> MoveResult:  # fmt: skip
    """A move to another room (`move`: booking.engine.moves_rooms.move_rooms), marked as a
    claim is when the store could not confirm it: the new room's record (in `room`) is shown
    as confirmed nowhere until settled."""
    try:
        moved = move()
    except NotDurable:
        _unconfirmed(client, moves_rooms.moved_id(move_id, room), now)
        raise
    booking = moved.booking
    if booking is not None and booking.unsure and tags_may_mix(client):
        unsure_forget(client=client, booking_id=booking.id)  # this time its call was durable
        moved = dataclasses.replace(moved, booking=dataclasses.replace(booking, unsure=False))
    return moved


def _unconfirmed(client: redis.Redis, booking_id: str, now: dt.datetime | None) -> None:
    """A move that ran (perhaps) and that the store could not say is safe: its booking (the
    new room's record, across rooms) is shown nowhere as confirmed, nor mailed, until a durable
    call settles it, as a claim's is (the buyer's retry of the form, same move id, does). On
    a cluster its index entries were not written: its room is named for the list readers."""
    claim_unsure_mark(client=client, booking_id=booking_id, now=now)
    room = booking_id_room(booking_id)
    if room is not None and not tags_may_mix(client):
        rooms_mark(client=client, rooms=[room])


def _reindex(client: redis.Redis, booking: Booking, before: str) -> None:
    """On a cluster: the moved booking's index entries (its new dates, then out of
    `unindexed`), and its old days' date-index entries removed (a crash before that leaves
    stale entries, which `bookings_between` reads past: it keeps a booking by its own dates)."""
    indexes_after_claim(client=client, booking=booking)
    old = {dt.date.fromisoformat(d) for d in before.split(",") if d} - set(booking.dates)
    if old:
        client.zrem(date_index(booking.room), *(date_member(booking.id, d) for d in old))


@dataclasses.dataclass(frozen=True)
class ReceiptResend:
    """What `receipt_resend` did: `sent` is False when the buyer has no confirmed address (the
    receipt stays owed: it goes out once they confirm one)."""

    booking: Booking
    sent: bool


def receipt_resend(
    *, client: redis.Redis, booking_id: str, actor_id: str, request_id: str | None = None
) -> ReceiptResend | None:
    """Queue the receipt of a confirmed booking again (code and .ics, in the buyer's language;
    the outbox renders it as it is now) and audit who asked; a form's `request_id` sent again
    (a double click) queues nothing more. A buyer without a confirmed address gets nothing now
    and nothing is audited as sent; the entry is queued all the same, so that the outbox keeps
    the receipt owed until an address is confirmed. None when there is no such confirmed
    booking."""
    booking = booking_get(client=client, booking_id=booking_id)
    if booking is None or booking.status != "confirmed":
        return None
    reachable = booking.owner_id.isdigit() and (
        mail_target(client=client, person_id=int(booking.owner_id)) is not None
    )
    args = (booking.id, booking.owner_id)
    if request_id_valid(request_id):
        assert request_id is not None
        if not mail_queue_once(client, kind="confirm", args=args, request_id=request_id):
            return ReceiptResend(booking, reachable)
    else:
        mail_queue(client, kind="confirm", args=args)
    if reachable:
        audit_write(
            client=client,
            room=booking.room,
            kind="receipt",
            actor=actor_id,
            booking_id=booking.id,
            detail="sent again",
        )
    return ReceiptResend(booking, reachable)
