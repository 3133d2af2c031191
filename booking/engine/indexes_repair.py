"""The indexes made good without an operator (run by the keeper, strongroom/keeper.py):

- every pass, the rooms' `unindexed` sets are drained: a booking whose claim was cut off
  before its index step (the web process or the store died in between) is listed within a
  pass, even when no mark names its room;
- after a failover, the entries the changed slots should hold are written again from the
  rooms' records (what a replica had not received when it took over), and every room is
  drained (a mark may have been lost with its primary). Staff see it in the audit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import redis
from redis.cluster import RedisCluster

from booking.domain.keys import RoomKeys, date_index, person_index
from booking.domain.records import Booking, booking_from_hash
from booking.domain.rules import room_count
from booking.engine.indexes import index_writes, indexes_drain
from strongroom.decoders import text_list
from strongroom.durable import durable_calls
from strongroom.store import is_cluster, tags_may_mix


def _rooms() -> list[int]:
    return list(range(1, room_count() + 1))


def indexes_sweep(client: redis.Redis) -> int:
    """Drain every room's `unindexed` set that names a booking (where claims cannot write the
    indexes themselves). One pipeline (one round trip per primary), and no write, when none
    does."""
    if tags_may_mix(client):
        return 0
    rooms = _rooms()
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.zcard(RoomKeys(room).unindexed)
    waiting = [room for room, size in zip(rooms, pipe.execute(), strict=True) if size]
    return indexes_drain(client=client, rooms=waiting)


def _bookings(client: redis.Redis, rooms: Sequence[int]) -> list[Booking]:
    """Every booking of the rooms, from their ledgers and records (two pipelines)."""
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.smembers(RoomKeys(room).ledger)
    records = [
        RoomKeys(room).record(booking_id)
        for room, ids in zip(rooms, pipe.execute(), strict=True)
        for booking_id in sorted(text_list(list(ids)))
    ]
    pipe = client.pipeline(transaction=False)
    for key in records:
        pipe.hgetall(key)
    return [b for b in (booking_from_hash(h) for h in pipe.execute()) if b is not None]


def indexes_repair(client: redis.Redis, slots: frozenset[int]) -> str:
    """Write again, from the records, every index entry that lives in `slots` (a changed
    primary's), confirmed durable; then drain every room. Returns 'bookings=N drained=M'."""
    drained = indexes_sweep(client)
    if not is_cluster(client):
        return f"bookings=0 drained={drained}"
    cluster = cast(RedisCluster, client)
    chosen = [
        b
        for b in _bookings(client, _rooms())
        if cluster.keyslot(person_index(b.owner_id)) in slots
        or cluster.keyslot(date_index(b.room)) in slots
    ]
    writes = [w for w in index_writes(chosen) if cluster.keyslot(w.route) in slots]
    if writes:
        durable_calls(client, writes)
    return f"bookings={len(chosen)} drained={drained}"
