"""Building-wide reads of the inventory bitmaps (the staff pages): the registry of inventory
keys that exist, and one class's day in every room (layout: booking.slots.layout)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import redis

from booking.domain.closures import Closure, closures_parse
from booking.domain.keys import RoomKeys
from booking.domain.rules import (
    BOXES_PER_ROOM,
    CLASSES,
    month_first,
    room_count,
)
from booking.slots.layout import bit_offsets
from strongroom import keyspace as ks
from strongroom.decoders import text_hash


@dataclass(frozen=True)
class InventoryKey:
    key: str
    room: int
    cls: str
    month: str


def inventory_keys(*, client: redis.Redis) -> list[InventoryKey]:
    """The registry: every inventory key that exists, by room and class (one pipeline)."""
    rooms = range(1, room_count() + 1)
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.smembers(RoomKeys(room).registry)
    found = []
    for members in pipe.execute():
        for key in sorted(members):
            parts = ks.BOOKING_INVENTORY.parse(key)
            found.append(InventoryKey(key, int(parts["room"]), parts["cls"], parts["month"]))
    return found


@dataclass(frozen=True)
class DayInventory:
    """The booked slots of one class on one day in every room: room -> one 24-bit hour mask per
    box (class C: 100 of them, box 1 first), one mask for class B, and 0/1 for class A."""

    cls: str
    date: dt.date
    rooms: dict[int, tuple[int, ...]]
    closures: tuple[Closure, ...] = ()  # every closure, when asked for (`with_closures`)


def day_inventory(
    *, client: redis.Redis, cls: str, date: dt.date, with_closures: bool = False
) -> DayInventory:
    """What is booked of one class on one day (any day: the bitmaps are by calendar month),
    room by room (one pipeline of BITFIELD_RO per room; an absent bitmap reads as all free),
    and with `with_closures` the closures list in the same pipeline."""
    if cls not in CLASSES:
        raise ValueError(f"no class {cls!r}")
    day = (date - month_first(date)).days
    kind = "u1" if cls == "A" else "u24"
    offsets = bit_offsets(cls, day, range(1, BOXES_PER_ROOM + 1))
    rooms = range(1, room_count() + 1)
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        args: list[object] = []
        for offset in offsets:
            args += ["GET", kind, offset]
        pipe.execute_command("BITFIELD_RO", RoomKeys(room).inventory(cls, date), *args)
    if with_closures:
        pipe.hgetall(ks.CLOSURES_ALL.key())
    replies = pipe.execute()
    closures = tuple(closures_parse(text_hash(replies.pop()))) if with_closures else ()
    masks = {
        room: tuple(int(v) for v in values) for room, values in zip(rooms, replies, strict=True)
    }
    return DayInventory(cls, date, masks, closures)
