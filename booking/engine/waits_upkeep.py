"""The waiting list's upkeep, beside the requests of buyers (booking.engine.waits): the sweep
that tells the waiters of slots freed by holds that expired and clears past days (every pass of
the mail sender), and the repair of the listings a failover can take (the keeper)."""

from __future__ import annotations

import datetime as dt
from typing import cast

import redis
from django.conf import settings
from redis.cluster import RedisCluster

from booking.domain.formats import months_arg, request_months
from booking.domain.keys import RoomKeys
from booking.domain.rules import (
    CLASSES,
    first_bookable_day,
    format_room,
    hold_new_id,
    priority_day_starts,
    room_count,
    season_days,
    site_today,
)
from booking.engine.waits import WAITS_CHECK, day_start_ms, wait_of
from strongroom import keyspace as ks
from strongroom.clock import to_ms
from strongroom.decoders import text_list
from strongroom.durable import Write, durable_calls
from strongroom.store import is_cluster


def waits_sweep(*, client: redis.Redis, now: dt.datetime | None = None) -> int:
    """Tell the waiters of slots freed by expired holds; clear past days. One pipeline over the
    rooms that have waits. Returns how many were told."""
    rooms = sorted(text_list(list(client.smembers(ks.BOOKING_WAIT_ROOMS.key()))))
    if not rooms:
        return 0
    at = to_ms(now or dt.datetime.now(tz=dt.UTC))
    first, starts = first_bookable_day(now), priority_day_starts(now)
    pipe = client.pipeline(transaction=False)
    numbers = [int(r) for r in rooms if r.isdigit()]
    # The months of the days still on sale: a wait for a day outside them stays as it is.
    tomorrow = site_today(now) + dt.timedelta(days=1)
    months = request_months(d for d in season_days() if d >= tomorrow)
    for room in numbers:
        keys = RoomKeys(room)
        call_keys, call_args = WAITS_CHECK.call(
            keys={
                "waits": keys.waits,
                "edition": keys.edition,
                "wait_notices": keys.wait_notices,
                "holds": keys.holds,
                "hold_days": keys.hold_days,
                "outbox": keys.outbox,
                "closures": keys.closures,
            },
            args={
                "now_ms": at,
                "first_day": first,
                "priority_hold_id": hold_new_id(room=room),
                "priority_hold_ms": settings.STRONGROOM_WAIT_HOLD_SECONDS * 1000,
                "day_starts": starts,
                "room": format_room(room),
                "months": months_arg(months),
            },
            more_keys=[keys.inventory(cls, m) for cls in CLASSES for m in months],
        )
        pipe.fcall(WAITS_CHECK.name, len(call_keys), *call_keys, *call_args)
    told = 0
    empty = []
    for room, reply in zip(numbers, pipe.execute(), strict=True):
        swept = WAITS_CHECK.reply_of(reply)
        told += int(swept["told"])
        if int(swept["left"]) == 0:
            empty.append(format_room(room))
    if empty:
        client.srem(ks.BOOKING_WAIT_ROOMS.key(), *empty)
    return told


def sweep_with_the_mail(client: redis.Redis) -> None:
    """Every pass of the mail sender also sweeps (the waiters it tells are mailed at once)."""
    waits_sweep(client=client)


def waits_repair(client: redis.Redis, slots: frozenset[int]) -> str:
    """After a failover: the set of rooms with waits and the buyers' own lists of waits, where
    their slots changed, written again from the rooms' waits (a wait is written to its room
    first, then listed under the buyer: a failover can take the listing, not the wait).
    Returns 'waits=N' (the waits listed again), or '' when none was."""
    if not is_cluster(client):
        return ""
    cluster = cast(RedisCluster, client)
    rooms = list(range(1, room_count() + 1))
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.zrange(RoomKeys(room).waits, 0, -1)
    waiting = {room: text_list(m) for room, m in zip(rooms, pipe.execute(), strict=True) if m}
    writes = []
    rooms_key = ks.BOOKING_WAIT_ROOMS.key()
    if waiting and cluster.keyslot(rooms_key) in slots:
        writes.append(Write(rooms_key, ("SADD", rooms_key, *map(format_room, waiting))))
    listed: dict[str, list[object]] = {}
    for room, members in waiting.items():
        for member in members:
            person, wait = wait_of(room, member)
            key = ks.BOOKING_WAITS_BY_PERSON.key(owner_id=person)
            if cluster.keyslot(key) in slots:
                entry = f"{format_room(room)}|{member}"
                listed.setdefault(key, []).extend((day_start_ms(wait.date), entry))
    writes += [Write(key, ("ZADD", key, *flat)) for key, flat in listed.items()]
    if writes:
        durable_calls(client, writes)
    count = sum(len(flat) // 2 for flat in listed.values())
    return f"waits={count}" if count else ""
