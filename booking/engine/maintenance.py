"""Staff maintenance of the whole store: flush the inventory (every room, atomically per room)
and rebuild the person and date indexes (then the stats) from the records."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import redis
from django.conf import settings

from booking.domain.keys import RoomKeys, date_indexes, member_booking_id, person_index
from booking.domain.records import Booking, booking_from_hash
from booking.domain.rules import booking_id_room, format_room, reason_clean, room_count
from booking.engine.bookings import room_sets_read
from booking.engine.indexes import indexes_drain, indexes_write
from booking.engine.stats import stats_rebuild
from strongroom.calls import FunctionSpec
from strongroom.clock import to_ms
from strongroom.durable import Call, durable_calls

# more_keys: the inventory keys, the record keys, then the stats key.
FLUSH_ROOM = FunctionSpec(
    "booking_flush_room",
    "FLUSH_ROOM",
    ("registry", "ledger", "holds", "audit", "hold_days", "edition"),
    ("actor", "reason", "now_ms", "audit_maxlen", "n_inv", "n_rec", "room"),
    replies=("ok removed cancelled", "retry", "invalid what"),
    key_tails=("inventories", "records", "stats"),
)


@dataclass(frozen=True)
class FlushResult:
    keys_removed: int
    bookings_cancelled: int


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
    rooms = range(1, room_count() + 1)
    indexes_drain(client=client, rooms=rooms)
    pipe = client.pipeline(transaction=False)
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


def _flush_room_call(
    room: int, registered: set[str], ledger: set[str], actor_id: str, reason: str, now_ms: int
) -> Call:
    """The booking_flush_room call for what was read of one room."""
    keys = RoomKeys(room)
    record_keys = [keys.record(booking_id) for booking_id in sorted(ledger)]
    all_keys, args = FLUSH_ROOM.call(
        keys={
            "registry": keys.registry,
            "edition": keys.edition,
            "ledger": keys.ledger,
            "holds": keys.holds,
            "audit": keys.audit,
            "hold_days": keys.hold_days,
        },
        args={
            "actor": actor_id,
            "reason": reason,
            "now_ms": now_ms,
            "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
            "n_inv": len(registered),
            "n_rec": len(record_keys),
            "room": format_room(room),
        },
        tails={"inventories": sorted(registered), "records": record_keys, "stats": [keys.stats]},
    )
    return Call(FLUSH_ROOM.name, all_keys, args)


def inventory_flush(*, client: redis.Redis, actor_id: str, reason: str) -> FlushResult:
    """Remove exactly the registered inventory keys and cancel the confirmed bookings, each
    room atomically (holds go too). All rooms' calls share one pipeline per primary, each
    followed by its WAITAOF; a room that changed between the read and its call is read and
    flushed again."""
    reason = reason_clean(reason)
    removed = cancelled = 0
    now_ms = to_ms(dt.datetime.now(tz=dt.UTC))
    pending = room_sets_read(client, range(1, room_count() + 1))
    for _attempt in range(5):
        if not pending:
            return FlushResult(removed, cancelled)
        order = sorted(pending)
        calls = [_flush_room_call(room, *pending[room], actor_id, reason, now_ms) for room in order]
        replies = durable_calls(client, calls, timeout_ms=2000)
        changed = []
        for room, reply in zip(order, replies, strict=True):
            answer = FLUSH_ROOM.answer_of(reply)
            if answer["status"] == "ok":
                removed += int(answer["removed"])
                cancelled += int(answer["cancelled"])
            else:
                changed.append(room)
        pending = room_sets_read(client, changed) if changed else {}
    raise RuntimeError("rooms kept changing during the flush")
