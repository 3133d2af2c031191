"""The person and date indexes of bookings: written after a claim (or by the claim itself on
one server); what a claim could not index is drained by the list readers (marked rooms) and
by the keeper (booking.engine.indexes_repair)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from typing import Any

import redis

from booking.domain.keys import (
    RoomKeys,
    date_index,
    date_member,
    date_score,
    person_index,
    person_score,
)
from booking.domain.records import Booking, booking_from_hash
from booking.domain.rules import booking_id_room, format_room
from strongroom import keyspace as ks
from strongroom.ahead import Command, command, pipeline_replies
from strongroom.decoders import text_list
from strongroom.durable import WAITAOF_TIMEOUT_MS, NotDurable, Write, durable_calls
from strongroom.store import UNAVAILABLE, StoreUnavailable, tags_may_mix

# A page that drains marked rooms waits this long at most for a replica (the entries are
# written either way, and shown; unconfirmed, the rooms stay marked for the keeper).
READER_WAIT_MS = 200


def indexes_after_claim(*, client: redis.Redis, booking: Booking) -> bool:
    """Where the claim could not write the indexes: write them, then take the booking out of
    its room's `unindexed` set. Returns whether it is indexed now.

    Through one connection (one server) that is one pipeline: the server runs and logs it in
    order, so the ZREM never outlives the entries. On a Redis Cluster the entries live on
    other primaries, where a failover can take away what no replica had: they are written
    with the configured durability (under aof+replica WAIT + WAITAOF 1 1 on each primary
    written to), and only once each confirmed is the id removed from `unindexed`. When they
    cannot be confirmed, or a primary is away, the booking stays named there (it is confirmed
    all the same: its room holds it durably) and its room is marked for the list readers.

    A booking the claim's WAITAOF confirmed (`booking.unsure` as written) loses its mark in the
    same round trip as the ZREM (booking.engine.unsure)."""
    keys = RoomKeys(booking.room)
    unindexed = keys.unindexed
    if not isinstance(client, redis.RedisCluster):
        pipe = _index_pipeline(client, [booking])
        pipe.zrem(unindexed, booking.id)
        if booking.unsure:
            pipe.hdel(keys.record(booking.id), "unsure")
        pipe.execute()
        return True
    try:
        durable_calls(client, index_writes([booking]))
    except (NotDurable, StoreUnavailable, *UNAVAILABLE):
        rooms_mark(client=client, rooms=[booking.room])
        if booking.unsure:
            with contextlib.suppress(*UNAVAILABLE):
                client.hdel(keys.record(booking.id), "unsure")
        return False
    # Not needed for the guarantee: a name left behind is drained again, which changes nothing.
    # (A mark left behind shows the booking as not confirmed until it is settled.)
    with contextlib.suppress(*UNAVAILABLE):
        pipe = client.pipeline(transaction=False)
        pipe.zrem(unindexed, booking.id)
        if booking.unsure:
            pipe.hdel(keys.record(booking.id), "unsure")
        pipe.execute()
    return True


def rooms_mark(*, client: redis.Redis, rooms: Iterable[int]) -> None:
    """Name rooms whose `unindexed` set needs a drain in the one set list readers read. Best
    effort and not waited for (the primary that could not confirm the entries may be this
    set's too): a mark that is lost, or never written, is made good by the keeper's next
    sweep of every room (booking.engine.indexes_repair)."""
    labels = sorted({format_room(room) for room in rooms})
    if labels:
        with contextlib.suppress(*UNAVAILABLE, redis.ReadOnlyError):
            client.sadd(ks.BOOKING_UNINDEXED_ROOMS.key(), *labels)


def indexes_write(
    *, client: redis.Redis, bookings: Iterable[Booking], timeout_ms: int = WAITAOF_TIMEOUT_MS
) -> None:
    """Add bookings to the person index and the date index (idempotent), confirmed with the
    configured durability on each primary written to (raises NotDurable if one cannot).

    A booking still marked "not confirmed yet" (booking.engine.unsure: its claim could not be
    confirmed, or the mark's removal after it was lost with a primary) is settled in the same
    call: a read of its record goes with the index writes, so its own primary waits too, and
    once all confirmed the mark goes."""
    bookings = list(bookings)
    marked = [RoomKeys(b.room).record(b.id) for b in bookings if b.unsure]
    writes = index_writes(bookings) + [Write(key, ("EXISTS", key)) for key in marked]
    if writes:
        durable_calls(client, writes, timeout_ms=timeout_ms)
    if marked:
        with contextlib.suppress(*UNAVAILABLE):  # left, the next drain or settle takes it
            pipe = client.pipeline(transaction=False)
            for key in marked:
                pipe.hdel(key, "unsure")
            pipe.execute()


def index_writes(bookings: Iterable[Booking]) -> list[Write]:
    """The ZADDs that index `bookings`: one per person index, one per date shard (chunked)."""
    people: dict[str, dict[str, int]] = {}
    shards: dict[str, dict[str, int]] = {}
    for booking in bookings:
        people.setdefault(person_index(booking.owner_id), {})[booking.id] = person_score(
            booking.dates
        )
        shard = shards.setdefault(date_index(booking.room), {})
        for date in booking.dates:
            shard[date_member(booking.id, date)] = date_score(date, booking.cls, booking.room)
    writes = []
    for key, members in (*people.items(), *shards.items()):
        items = list(members.items())
        for start in range(0, len(items), 5000):
            flat = [
                part for member, score in items[start : start + 5000] for part in (score, member)
            ]
            writes.append(Write(key, ("ZADD", key, *flat)))
    return writes


def _index_pipeline(client: redis.Redis, bookings: Iterable[Booking]) -> Any:
    pipe = client.pipeline(transaction=False)
    for write in index_writes(bookings):
        pipe.execute_command(*write.command)
    return pipe


def indexes_drain(
    *, client: redis.Redis, rooms: Sequence[int], timeout_ms: int = WAITAOF_TIMEOUT_MS
) -> int:
    """Index the bookings the rooms' `unindexed` sets still name, then remove them from the
    sets (never before their entries are confirmed: a crash in between leaves them named
    there, and writing an entry twice changes nothing). The rooms' marks go first, so that a
    claim marking one of them meanwhile is either drained here or stays marked. Returns how
    many were drained."""
    if not rooms:
        return 0
    marks = ks.BOOKING_UNINDEXED_ROOMS.key()
    if not tags_may_mix(client):
        client.srem(marks, *(format_room(room) for room in rooms))
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.zrange(RoomKeys(room).unindexed, 0, -1)
    waiting = {room: text_list(ids) for room, ids in zip(rooms, pipe.execute(), strict=True) if ids}
    _drain(client, waiting, timeout_ms)
    return sum(len(room_ids) for room_ids in waiting.values())


def indexes_read_commands(*, client: redis.Redis, reads: Sequence[Command]) -> list[Command]:
    """What `indexes_read` sends first: on a cluster the set of marked rooms, then `reads`."""
    if tags_may_mix(client):
        return list(reads)
    return [command("SMEMBERS", ks.BOOKING_UNINDEXED_ROOMS.key()), *reads]


def indexes_read(*, client: redis.Redis, reads: Sequence[Command]) -> list[Any]:
    """The replies of the index reads `reads`, with every booking a claim could not index
    indexed first. On one server nothing can be missing: one pipeline as asked. On a cluster
    the set of marked rooms rides in the same pipeline (one small set, not every room's
    `unindexed` set); the rooms it names are drained and the reads run again. Served from
    what was read ahead when it was (strongroom/ahead.py)."""
    first = indexes_read_commands(client=client, reads=reads)
    replies = pipeline_replies(client, first)
    if len(first) == len(reads):
        return list(replies)
    marked = [int(room) for room in text_list(list(replies[0])) if room.isdigit()]
    if not marked:
        return list(replies[1:])
    indexes_drain(client=client, rooms=marked, timeout_ms=READER_WAIT_MS)
    return pipeline_replies(client, reads)


def _drain(client: redis.Redis, waiting: dict[int, list[str]], timeout_ms: int) -> None:
    if not waiting:
        return
    ids = [booking_id for room_ids in waiting.values() for booking_id in room_ids]
    found = bookings_by_id(client=client, ids=ids)
    try:
        indexes_write(client=client, bookings=found, timeout_ms=timeout_ms)
    except NotDurable:
        # Written, not confirmed: the names stay, and so does the mark (the reader shows them).
        rooms_mark(client=client, rooms=waiting)
        return
    except (StoreUnavailable, *UNAVAILABLE):
        rooms_mark(client=client, rooms=waiting)
        raise
    pipe = client.pipeline(transaction=False)
    for room, room_ids in waiting.items():
        pipe.zrem(RoomKeys(room).unindexed, *room_ids)
    pipe.execute()


def records_by_id(*, client: redis.Redis, ids: Sequence[str]) -> list[Booking]:
    """The records of `ids` in one pipeline, malformed ids and missing records left out (a
    move's pending record and a moved booking's old one kept)."""
    pipe = client.pipeline(transaction=False)
    for booking_id in ids:
        room = booking_id_room(booking_id)
        if room is not None:
            pipe.hgetall(RoomKeys(room).record(booking_id))
    return [b for b in map(booking_from_hash, pipe.execute()) if b is not None]


def bookings_by_id(*, client: redis.Redis, ids: Sequence[str]) -> list[Booking]:
    """The records of `ids` in one pipeline (malformed ids, missing records, and what is not
    (or no longer) a booking left out: a move's pending record, a moved booking's old one)."""
    found = records_by_id(client=client, ids=ids)
    return [b for b in found if b.status not in ("pending", "moved")]
