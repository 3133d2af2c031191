"""Writes of the booking engine: claim, hold, cancel, pickup, flush, index rebuild.

Each check-and-take is one Redis Function (booking/lua/booking.lua) on one room's keys;
confirmed changes go through `durable_fcall` (FCALL + WAITAOF, one round trip).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from booking.domain import (
    SLOTS_PER_DAY,
    Booking,
    Hold,
    InvalidRequest,
    Slot,
    SlotRequest,
    booking_from_hash,
    booking_id_room,
    booking_new_id,
    check_dates,
    check_owner_id,
    code_mac,
    code_new,
    code_normalise,
    code_seal,
    flat_to_dict,
    format_room,
    from_ms,
    hold_new_id,
    local_now,
    request_id_new,
    request_id_valid,
    room_count,
    season_bytes,
    season_days,
    season_key,
    slots_from_reply,
    to_ms,
)
from booking.keys import (
    RoomKeys,
    date_index,
    date_indexes,
    date_member,
    date_score,
    member_booking_id,
    person_index,
)
from strongroom import keyspace as ks
from strongroom.store import (
    Call,
    Write,
    durable_calls,
    durable_fcall,
    fcall,
    load_functions,
    text_or_none,
    text_values,
)

__all__ = [
    "CancelResult",
    "ClaimResult",
    "FlushResult",
    "HoldResult",
    "PickupResult",
    "booking_cancel",
    "booking_claim",
    "booking_hold",
    "booking_hold_release",
    "booking_new_id",
    "booking_pickup",
    "hold_new_id",
    "indexes_rebuild",
    "indexes_write",
    "inventory_flush",
    "stats_rebuild",
]

_CODE_ATTEMPTS = 5
_REASON_LIMIT = 500


@dataclass(frozen=True)
class ClaimResult:
    """ok: the booking is confirmed (and durable); otherwise `taken` lists what is not free."""

    ok: bool
    booking: Booking | None = None
    taken: tuple[Slot, ...] = ()


@dataclass(frozen=True)
class HoldResult:
    ok: bool
    hold: Hold | None = None
    taken: tuple[Slot, ...] = ()


@dataclass(frozen=True)
class CancelResult:
    ok: bool
    outcome: str
    message: Any
    booking: Booking | None = None


@dataclass(frozen=True)
class PickupResult:
    ok: bool
    outcome: str
    message: Any
    booking: Booking | None = None
    locked_until: dt.datetime | None = None


@dataclass(frozen=True)
class FlushResult:
    keys_removed: int
    bookings_cancelled: int


def _request_args(request: SlotRequest) -> list[str]:
    start, end = request.hours or (0, 0)
    return [
        request.cls,
        ",".join(str(d) for d in request.days),
        str(start),
        str(end),
        ",".join(str(b) for b in request.boxes),
    ]


def _check_id(kind: str, value: str, room: int) -> None:
    if booking_id_room(value) != room:
        raise ValueError(f"{kind} {value!r} is not an id of room {room}")


def _recheck(request: SlotRequest, now: dt.datetime | None) -> None:
    if not isinstance(request, SlotRequest):
        raise TypeError("request must be a SlotRequest (use slot_request_parse)")
    # The request may have been parsed before midnight: the day-ahead rule holds at claim time.
    errors = check_dates(request.dates, now)
    if errors:
        raise InvalidRequest(errors)


def _refuse_invalid(function: str, reply: list[Any]) -> None:
    # The function refused a malformed request before any write: a SlotRequest built by hand.
    if reply[0] == "invalid":
        raise ValueError(f"{function} refused a malformed request ({reply[1]})")


def booking_claim(
    *,
    client: redis.Redis,
    owner_id: str,
    request: SlotRequest,
    booking_id: str,
    hold_id: str | None = None,
    now: dt.datetime | None = None,
) -> ClaimResult:
    """Take every slot of `request` for `owner_id`, or nothing; a retry with the same
    `booking_id` returns the same booking. A `hold_id` of the same owner is converted."""
    check_owner_id(owner_id)
    _recheck(request, now)
    _check_id("booking id", booking_id, request.room)
    if hold_id:
        _check_id("hold id", hold_id, request.room)
    room = RoomKeys(request.room)
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    keys = [
        room.inventory(request.cls),
        room.registry,
        room.record(booking_id),
        room.ledger,
        room.codes,
        room.holds,
        room.audit,
        room.stats,
    ]
    dates = ",".join(d.isoformat() for d in request.dates)
    made = local_now(from_ms(now_ms)).date().isoformat()
    cls, days, start, end, boxes = _request_args(request)
    for _attempt in range(_CODE_ATTEMPTS):
        code = code_new()
        args = [
            owner_id,
            cls,
            season_key(),
            days,
            start,
            end,
            boxes,
            booking_id,
            now_ms,
            code_mac(request.room, code),
            code_seal(code),
            dates,
            hold_id or "",
            settings.STRONGROOM_AUDIT_MAXLEN,
            format_room(request.room),
            season_bytes(request.cls),
            len(season_days()),
            made,
        ]
        reply = durable_fcall(client, "booking_claim", keys, args)
        if reply[0] != "code_clash":
            break
    else:
        raise RuntimeError("no free pickup code after several attempts")
    _refuse_invalid("booking_claim", reply)
    if reply[0] == "id_in_use":
        raise ValueError(f"booking id {booking_id!r} belongs to another owner")
    if reply[0] == "taken":
        return ClaimResult(False, taken=tuple(slots_from_reply(reply[1:], request.cls)))
    booking = booking_from_hash(flat_to_dict(reply[1]))
    assert booking is not None
    indexes_write(client=client, bookings=[booking])
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
    STRONGROOM_HOLD_SECONDS); other buyers' claims and holds see them as taken."""
    check_owner_id(owner_id)
    _recheck(request, now)
    _check_id("hold id", hold_id, request.room)
    ttl = settings.STRONGROOM_HOLD_SECONDS if ttl_seconds is None else int(ttl_seconds)
    if not 1 <= ttl <= 3600:
        raise ValueError("a hold lasts 1 to 3600 seconds")
    room = RoomKeys(request.room)
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    cls, days, start, end, boxes = _request_args(request)
    args = [
        owner_id,
        cls,
        days,
        start,
        end,
        boxes,
        hold_id,
        now_ms,
        ttl * 1000,
        settings.STRONGROOM_AUDIT_MAXLEN,
        format_room(request.room),
        len(season_days()),
    ]
    reply = fcall(
        client, "booking_hold", [room.inventory(request.cls), room.holds, room.audit], args
    )
    _refuse_invalid("booking_hold", reply)
    if reply[0] == "id_in_use":
        raise ValueError(f"hold id {hold_id!r} belongs to another owner")
    if reply[0] == "taken":
        return HoldResult(False, taken=tuple(slots_from_reply(reply[1:], request.cls)))
    expires = from_ms(reply[1])
    assert expires is not None
    return HoldResult(True, hold=Hold(hold_id, owner_id, request, expires))


def booking_hold_release(*, client: redis.Redis, owner_id: str, hold_id: str) -> bool:
    """Give a hold back before it expires; False if it was not this owner's live hold."""
    room = booking_id_room(hold_id)
    if room is None:
        return False
    return bool(fcall(client, "booking_hold_release", [RoomKeys(room).holds], [hold_id, owner_id]))


_CANCEL_MESSAGES = {
    "cancelled": _("The booking is cancelled; its treasures are free again."),
    "already_cancelled": _("This booking was already cancelled."),
    "not_found": _("There is no such booking."),
    "forbidden": _("You can only cancel your own bookings."),
    "collected": _("This booking has been collected and can no longer be cancelled."),
    "started": _("Bookings can be cancelled only before their first day; ask the staff."),
}


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
    reason = " ".join(str(reason).split())[:_REASON_LIMIT]
    for _attempt in range(3):
        cls, season = text_values(client.hmget(keys.record(booking_id), ["cls", "season"]))
        if cls is None:
            return CancelResult(False, "not_found", _CANCEL_MESSAGES["not_found"])
        args = [
            actor_id,
            "1" if actor_is_staff else "0",
            today,
            reason,
            now_ms,
            settings.STRONGROOM_AUDIT_MAXLEN,
            request_id,
        ]
        reply = durable_fcall(
            client,
            "booking_cancel",
            [
                keys.record(booking_id),
                keys.inventory(cls, season),
                keys.registry,
                keys.audit,
                keys.stats,
            ],
            args,
        )
        if reply[0] != "stale":
            break
    outcome = reply[0]
    booking = booking_from_hash(flat_to_dict(reply[1])) if len(reply) > 1 else None
    return CancelResult(outcome == "cancelled", outcome, _CANCEL_MESSAGES[outcome], booking)


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
        args = [
            mac,
            booking_id,
            to_ms(moment),
            moment.date().isoformat(),
            moment.hour * 60 + moment.minute,
            settings.STRONGROOM_PICKUP_GRACE_MINUTES,
            settings.STRONGROOM_PICKUP_MAX_FAILURES,
            settings.STRONGROOM_PICKUP_WINDOW_SECONDS * 1000,
            settings.STRONGROOM_PICKUP_LOCK_SECONDS * 1000,
            attempt,
            settings.STRONGROOM_AUDIT_MAXLEN,
            format_room(number),
            (moment.date() - dt.timedelta(days=1)).isoformat(),
        ]
        record_key = keys.record(booking_id or "-")
        reply = durable_fcall(
            client,
            "booking_pickup",
            [
                keys.pickup_lock,
                keys.pickup_failures,
                keys.codes,
                record_key,
                keys.audit,
                keys.stats,
            ],
            args,
        )
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


# --- Indexes outside the room's slot --------------------------------------------------------


def indexes_write(*, client: redis.Redis, bookings: Iterable[Booking]) -> None:
    """Add bookings to the person index and the date index (idempotent), as durable as the
    claim itself: a confirmed booking stays listed for its owner after a failover. One round
    trip (one per primary reached on a cluster)."""
    writes: list[Write] = []
    by_date: dict[str, dict[str, int]] = {}
    for booking in bookings:
        index = person_index(booking.owner_id)
        writes.append(Write(index, ("ZADD", index, to_ms(booking.created_at), booking.id)))
        shard = by_date.setdefault(date_index(booking.room), {})
        for date in booking.dates:
            shard[date_member(booking.id, date)] = date_score(date, booking.cls, booking.room)
    for key, members in by_date.items():
        items = list(members.items())
        for start in range(0, len(items), 5000):
            flat = [
                part for member, score in items[start : start + 5000] for part in (score, member)
            ]
            writes.append(Write(key, ("ZADD", key, *flat)))
    if writes:
        durable_calls(client, writes)


def _records(client: redis.Redis, ids_by_room: dict[int, Sequence[str]]) -> list[Booking]:
    pipe = client.pipeline(transaction=False)
    for room, ids in ids_by_room.items():
        for booking_id in ids:
            pipe.hgetall(RoomKeys(room).record(booking_id))
    return [b for b in (booking_from_hash(h) for h in pipe.execute()) if b is not None]


def indexes_rebuild(*, client: redis.Redis) -> int:
    """Rebuild the person and date indexes from the booking records (found via the ledgers).

    Safe while people book: entries are only added, and an entry is removed only when its
    booking record does not exist. (Deleting the indexes and writing them again would drop the
    entries of a claim made between the read and the delete.) A claim writes its record before
    its index entries, so a live booking's entry is never removed."""
    pipe = client.pipeline(transaction=False)
    rooms = range(1, room_count() + 1)
    for room in rooms:
        pipe.smembers(RoomKeys(room).ledger)
    ids_by_room: dict[int, Sequence[str]] = {
        room: sorted(ids) for room, ids in zip(rooms, pipe.execute(), strict=True)
    }
    bookings = _records(client, ids_by_room)
    indexes_write(client=client, bookings=bookings)
    stats_rebuild(client=client)
    owners = sorted({b.owner_id for b in bookings})
    pipe = client.pipeline(transaction=False)
    shards = date_indexes()
    for shard in shards:
        pipe.zrange(shard, 0, -1)
    for owner in owners:
        pipe.zrange(person_index(owner), 0, -1)
    replies = pipe.execute()
    dated = dict(zip(shards, replies[: len(shards)], strict=True))
    personal = replies[len(shards) :]
    known = {b.id for b in bookings}
    indexed = {member_booking_id(m) for members in dated.values() for m in members}
    indexed |= {i for ids in personal for i in ids}
    # Something that is not even a booking id cannot have a record: gone without asking.
    suspects = sorted(indexed - known)
    checked = [i for i in suspects if booking_id_room(i) is not None]
    pipe = client.pipeline(transaction=False)
    for booking_id in checked:
        pipe.exists(RoomKeys(booking_id_room(booking_id) or 0).record(booking_id))
    found = dict(zip(checked, pipe.execute(), strict=True))
    gone = {i for i in suspects if not int(found.get(i, 0))}
    if gone:
        pipe = client.pipeline(transaction=False)
        for shard, members in dated.items():
            stale = [m for m in members if member_booking_id(m) in gone]
            if stale:
                pipe.zrem(shard, *stale)
        for owner, ids in zip(owners, personal, strict=True):
            if gone.intersection(ids):
                pipe.zrem(person_index(owner), *gone.intersection(ids))
        pipe.execute()
    return len(bookings)


# --- Flush ----------------------------------------------------------------------------------


def _flush_room_call(
    room: int, registered: set[str], ledger: set[str], actor_id: str, reason: str, now_ms: int
) -> Call:
    """The booking_flush_room call for what was read of one room."""
    keys = RoomKeys(room)
    record_keys = [keys.record(booking_id) for booking_id in sorted(ledger)]
    all_keys = [keys.registry, keys.ledger, keys.holds, keys.audit, *sorted(registered)]
    all_keys += [*record_keys, keys.stats]
    args = [
        actor_id,
        reason,
        now_ms,
        settings.STRONGROOM_AUDIT_MAXLEN,
        len(registered),
        len(record_keys),
        format_room(room),
    ]
    return Call("booking_flush_room", all_keys, args)


def _read_rooms(client: redis.Redis, rooms: Sequence[int]) -> dict[int, tuple[set[str], set[str]]]:
    """Registry and ledger of each room (one pipeline); rooms with neither are left out."""
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.smembers(RoomKeys(room).registry)
        pipe.smembers(RoomKeys(room).ledger)
    replies = pipe.execute()
    found = {}
    for index, room in enumerate(rooms):
        registered, ledger = replies[2 * index], replies[2 * index + 1]
        if registered or ledger:
            found[room] = (registered, ledger)
    return found


def inventory_flush(*, client: redis.Redis, actor_id: str, reason: str) -> FlushResult:
    """Remove exactly the registered inventory keys and cancel the confirmed bookings, each
    room atomically (holds go too). All rooms' calls share one pipeline per primary, each
    followed by its WAITAOF; a room that changed between the read and its call is read and
    flushed again."""
    reason = " ".join(str(reason).split())[:_REASON_LIMIT]
    removed = cancelled = 0
    now_ms = to_ms(dt.datetime.now(tz=dt.UTC))
    pending = _read_rooms(client, range(1, room_count() + 1))
    for _attempt in range(5):
        if not pending:
            return FlushResult(removed, cancelled)
        order = sorted(pending)
        calls = [_flush_room_call(room, *pending[room], actor_id, reason, now_ms) for room in order]
        replies = durable_calls(client, calls, timeout_ms=2000)
        changed = []
        for room, reply in zip(order, replies, strict=True):
            if reply[0] == "ok":
                removed += int(reply[1])
                cancelled += int(reply[2])
            else:
                changed.append(room)
        pending = _read_rooms(client, changed) if changed else {}
    raise RuntimeError("rooms kept changing during the flush")


# --- Stats ----------------------------------------------------------------------------------


def _stats_call(
    room: int, registered: set[str], ledger: set[str], created: dict[str, str]
) -> list[object]:
    """FCALL arguments of booking_stats_rebuild for what was read of one room."""
    keys = RoomKeys(room)
    inventories = sorted(registered)
    ids = sorted(ledger)
    all_keys = [keys.stats, keys.registry, keys.ledger, *inventories]
    all_keys += [keys.record(booking_id) for booking_id in ids]
    args: list[object] = [len(inventories), len(ids)]
    for key in inventories:
        parts = ks.BOOKING_INVENTORY.parse(key)
        args += [parts["season"], parts["cls"], SLOTS_PER_DAY[parts["cls"]]]
    for booking_id in ids:
        moment = from_ms(created.get(booking_id)) or dt.datetime.fromtimestamp(0, tz=dt.UTC)
        args.append(local_now(moment).date().isoformat())
    return ["booking_stats_rebuild", len(all_keys), *all_keys, *args]


def stats_rebuild(*, client: redis.Redis, rooms: Sequence[int] | None = None) -> int:
    """Recompute the stats hash of `rooms` (default: every room) from the booking records and
    the inventory bitmaps, each room atomically (booking_stats_rebuild); a room that changed
    between the read and its call is read again. Returns the number of records counted.

    Needed once for data written before the stats existed (rebuildindexes runs it); from then
    on the claim, cancel, pickup and flush functions keep the counters exact themselves."""
    counted = 0
    pending = _read_rooms(client, list(range(1, room_count() + 1)) if rooms is None else rooms)
    for _attempt in range(5):
        if not pending:
            return counted
        order = sorted(pending)
        pipe = client.pipeline(transaction=False)
        for room in order:
            for booking_id in sorted(pending[room][1]):
                pipe.hget(RoomKeys(room).record(booking_id), "created")
        created_at = iter(pipe.execute())
        pipe = client.pipeline(transaction=False)
        for room in order:
            registered, ledger = pending[room]
            created = {i: text_or_none(next(created_at)) or "" for i in sorted(ledger)}
            pipe.execute_command("FCALL", *_stats_call(room, registered, ledger, created))
        try:
            replies = pipe.execute()
        except redis.ResponseError as exc:
            if "Function not found" not in str(exc):
                raise
            load_functions(client)
            continue
        changed = []
        for room, reply in zip(order, replies, strict=True):
            if reply[0] == "ok":
                counted += int(reply[1])
            else:
                changed.append(room)
        pending = _read_rooms(client, changed) if changed else {}
    raise RuntimeError("rooms kept changing during the stats rebuild")
