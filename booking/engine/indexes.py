"""The person and date indexes of bookings: written after a claim (or by the claim itself on
one server), and drained by every list reader (see below)."""

from __future__ import annotations

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
from booking.domain.rules import booking_id_room, room_count
from strongroom.ahead import Command, command, pipeline_replies
from strongroom.store import text_list

_INLINE_ATTRIBUTE = "_strongroom_indexes_inline"


def indexes_inline(client: redis.Redis) -> bool:
    """Whether the claim function can write the indexes itself: the server is not in cluster
    mode (where keys of other hash tags cannot meet in one call). Asked once per client."""
    known: bool | None = getattr(client, _INLINE_ATTRIBUTE, None)
    if known is None:
        if isinstance(client, redis.RedisCluster):
            known = False
        else:
            known = str(client.info("cluster").get("cluster_enabled", 0)) != "1"
        setattr(client, _INLINE_ATTRIBUTE, known)
    return known


def indexes_after_claim(*, client: redis.Redis, booking: Booking) -> None:
    """Where the claim could not write the indexes: write them, then take the booking out of
    its room's `unindexed` set. Through one connection (one server) that is one pipeline: the
    server runs and logs it in order, so the ZREM never outlives the entries. On a Redis
    Cluster the entries live on other primaries: they are written first, the ZREM after."""
    unindexed = RoomKeys(booking.room).unindexed
    if isinstance(client, redis.RedisCluster):
        indexes_write(client=client, bookings=[booking])
        client.zrem(unindexed, booking.id)
        return
    pipe = _index_pipeline(client, [booking])
    pipe.zrem(unindexed, booking.id)
    pipe.execute()


def indexes_write(*, client: redis.Redis, bookings: Iterable[Booking]) -> None:
    """Add bookings to the person index and the date index (one pipeline; idempotent)."""
    _index_pipeline(client, bookings).execute()


def _index_pipeline(client: redis.Redis, bookings: Iterable[Booking]) -> Any:
    pipe = client.pipeline(transaction=False)
    by_shard: dict[str, dict[str, int]] = {}
    for booking in bookings:
        pipe.zadd(person_index(booking.owner_id), {booking.id: person_score(booking.dates)})
        shard = by_shard.setdefault(date_index(booking.room), {})
        for date in booking.dates:
            shard[date_member(booking.id, date)] = date_score(date, booking.cls, booking.room)
    for key, members in by_shard.items():
        items = list(members.items())
        for start in range(0, len(items), 5000):
            pipe.zadd(key, dict(items[start : start + 5000]))
    return pipe


def indexes_drain(*, client: redis.Redis, rooms: Sequence[int]) -> int:
    """Index the bookings the rooms' `unindexed` sets still name, then remove them from the
    sets (never before their entries are written: a crash in between leaves them listed here,
    and writing an entry twice changes nothing). Returns how many were drained."""
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.zrange(RoomKeys(room).unindexed, 0, -1)
    waiting = {room: text_list(ids) for room, ids in zip(rooms, pipe.execute(), strict=True) if ids}
    _drain(client, waiting)
    return sum(len(room_ids) for room_ids in waiting.values())


def indexes_read_commands(*, client: redis.Redis, reads: Sequence[Command]) -> list[Command]:
    """What `indexes_read` sends first: on a cluster every room's `unindexed` set, then `reads`."""
    if indexes_inline(client):
        return list(reads)
    rooms = range(1, room_count() + 1)
    return [*(command("ZRANGE", RoomKeys(room).unindexed, 0, -1) for room in rooms), *reads]


def indexes_read(*, client: redis.Redis, reads: Sequence[Command]) -> list[Any]:
    """The replies of the index reads `reads`, with every booking the indexes miss indexed
    first. On one server nothing can be missing: one pipeline as asked. On a cluster the rooms'
    `unindexed` sets ride in the same pipeline; whatever they name (a claim cut off before its
    index step) is indexed and drained, and the reads run again. Served from what was read
    ahead when it was (strongroom/ahead.py)."""
    first = indexes_read_commands(client=client, reads=reads)
    replies = pipeline_replies(client, first)
    unindexed = len(first) - len(reads)
    waiting = {
        room: text_list(ids)
        for room, ids in zip(range(1, unindexed + 1), replies[:unindexed], strict=True)
        if ids
    }
    if not waiting:
        return list(replies[unindexed:])
    _drain(client, waiting)
    return pipeline_replies(client, reads)


def _drain(client: redis.Redis, waiting: dict[int, list[str]]) -> None:
    if not waiting:
        return
    ids = [booking_id for room_ids in waiting.values() for booking_id in room_ids]
    indexes_write(client=client, bookings=bookings_by_id(client=client, ids=ids))
    pipe = client.pipeline(transaction=False)
    for room, room_ids in waiting.items():
        pipe.zrem(RoomKeys(room).unindexed, *room_ids)
    pipe.execute()


def bookings_by_id(*, client: redis.Redis, ids: Sequence[str]) -> list[Booking]:
    """The records of `ids` in one pipeline (malformed ids, missing records, and what is not
    (or no longer) a booking left out: a move's pending record, a moved booking's old one)."""
    pipe = client.pipeline(transaction=False)
    wanted = [(i, booking_id_room(i)) for i in ids]
    for booking_id, room in wanted:
        if room is not None:
            pipe.hgetall(RoomKeys(room).record(booking_id))
    found = (booking_from_hash(h) for h in pipe.execute())
    return [b for b in found if b is not None and b.status not in ("pending", "moved")]
