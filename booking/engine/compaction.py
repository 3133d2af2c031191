"""Past days do not grow the store for ever.

- A calendar month's bitmaps go once its last day has passed and its pickups can no longer
  happen (the day after the last day: hours that end at midnight run a grace into it). Holds
  expire by themselves and waits go at each day's end (booking.engine.waits), so nothing of a
  past day's availability stays.
- Booking records (with their pickup code, reference and index entries), the rooms' and the
  staff's audit entries and the rooms' statistics stay STRONGROOM_RETENTION_DAYS after their day
  (a booking: its last day; statistics: their month's last day), then go too.

Each room is compacted in one MULTI on its own slot (the indexes in other slots follow); a
month or a record is only dropped once no function can touch it again (claims and holds take
only days from tomorrow on), so compaction needs no lock."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import redis
from django.conf import settings

from booking.domain.keys import (
    RoomKeys,
    date_index,
    date_member,
    person_index,
)
from booking.domain.rules import month_length, room_count, site_today
from strongroom import keyspace as ks
from strongroom.clock import to_ms
from strongroom.decoders import text_list


@dataclass(frozen=True)
class CompactResult:
    bitmaps: int  # month bitmaps dropped
    bookings: int  # records dropped (past the retention)
    stats_fields: int  # stats fields of months past the retention


def _month_end(name: str) -> dt.date | None:
    """The last day of the month 'YYYY-MM' (None: not a month name)."""
    try:
        first = dt.date.fromisoformat(f"{name}-01")
    except ValueError:
        return None
    return first + dt.timedelta(days=month_length(first) - 1)


def _stats_month(field: str) -> str:
    """The month a stats field counts ('' for the format field `v`)."""
    parts = field.split(":")
    return parts[1] if len(parts) >= 3 else ""


def past_compact(
    *, client: redis.Redis, now: dt.datetime | None = None, rooms: Sequence[int] | None = None
) -> CompactResult:
    """Drop the bitmaps of months whose pickups are over, and records, audit entries and
    statistics older than STRONGROOM_RETENTION_DAYS (see the module's docstring)."""
    today = site_today(now)
    # A day's pickups end in the early hours of the next one: its month goes the day after.
    done_before = today - dt.timedelta(days=1)
    keep_from = today - dt.timedelta(days=settings.STRONGROOM_RETENTION_DAYS)
    rooms = list(range(1, room_count() + 1)) if rooms is None else list(rooms)
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        keys = RoomKeys(room)
        pipe.smembers(keys.registry)
        pipe.smembers(keys.ledger)
        pipe.hkeys(keys.stats)
    replies = pipe.execute()
    bitmaps = bookings = fields = 0
    index_drops: list[tuple[str, str, list[str]]] = []  # (owner, booking id, dates)
    for n, room in enumerate(rooms):
        keys = RoomKeys(room)
        registry, ledger, stats_fields = (text_list(list(r)) for r in replies[3 * n : 3 * n + 3])
        gone_bitmaps = [
            key
            for key in registry
            if (end := _month_end(ks.BOOKING_INVENTORY.parse(key)["month"])) and end < done_before
        ]
        gone_fields = [
            f
            for f in stats_fields
            if (end := _month_end(_stats_month(f))) is not None and end < keep_from
        ]
        gone_records = []
        if ledger:
            read = client.pipeline(transaction=False)
            for booking_id in ledger:
                read.hmget(keys.record(booking_id), ["dates", "owner", "code_mac", "ref"])
            for booking_id, (dates, owner, mac, ref) in zip(ledger, read.execute(), strict=True):
                days = [d for d in (dates or "").split(",") if d]
                if days and dt.date.fromisoformat(max(days)) < keep_from:
                    gone_records.append((booking_id, owner or "", mac or "", ref or "", days))
        if not (gone_bitmaps or gone_fields or gone_records):
            continue
        write = client.pipeline(transaction=True)
        # The room changes: its edition with it, in the same MULTI (kept pieces, booking/README.md).
        write.incr(keys.edition)
        if gone_bitmaps:
            write.delete(*gone_bitmaps)
            write.srem(keys.registry, *gone_bitmaps)
        if gone_fields:
            write.hdel(keys.stats, *gone_fields)
        for booking_id, _owner, mac, ref, _days in gone_records:
            write.delete(keys.record(booking_id))
            write.srem(keys.ledger, booking_id)
            write.zrem(keys.unindexed, booking_id)
            if mac:
                write.hdel(keys.codes, mac)
            if ref:
                write.hdel(keys.refs, ref)
        # The room's audit entries older than the retention (stream ids are epoch ms).
        cutoff = to_ms(dt.datetime.combine(keep_from, dt.time(), tzinfo=dt.UTC))
        write.xtrim(keys.audit, minid=cutoff)
        write.execute()
        bitmaps += len(gone_bitmaps)
        fields += len(gone_fields)
        bookings += len(gone_records)
        index_drops += [(owner, i, days) for i, owner, _m, _r, days in gone_records]
    if index_drops:
        pipe = client.pipeline(transaction=False)
        for owner, booking_id, days in index_drops:
            room = int(booking_id[:3])
            if owner:
                pipe.zrem(person_index(owner), booking_id)
            pipe.zrem(
                date_index(room),
                *(date_member(booking_id, dt.date.fromisoformat(d)) for d in days),
            )
        pipe.execute()
    cutoff = to_ms(dt.datetime.combine(keep_from, dt.time(), tzinfo=dt.UTC))
    client.xtrim(ks.STAFF_AUDIT.key(), minid=cutoff)
    return CompactResult(bitmaps, bookings, fields)
