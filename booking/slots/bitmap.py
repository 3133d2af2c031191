"""Building-wide reads of the inventory bitmaps (the staff pages): the registry of inventory
keys that exist, and one class's day in every room, booked, held and closed (built on the one
read of rooms, booking.slots.room_read; layout: booking.slots.layout)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

import redis

from booking.domain.keys import RoomKeys
from booking.domain.rules import (
    BOXES_PER_ROOM,
    CLASSES,
    HOURS_PER_DAY,
    calendar_day,
    room_count,
)
from booking.slots.layout import box_mask
from booking.slots.room_read import RoomDays, rooms_read
from strongroom import keyspace as ks
from strongroom.clock import from_ms


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
    """One class on one day in every room: room -> one 24-bit hour mask per box (class C: 100
    of them, box 1 first), one mask for class B, and 0/1 for class A; the same shape for what
    buyers' unexpired holds keep (not booked), and per room the hours staff closed."""

    cls: str
    date: dt.date
    rooms: dict[int, tuple[int, ...]]  # booked
    held: dict[int, tuple[int, ...]] = field(default_factory=dict)  # held, not booked
    # Per room with holds: (box, hour) -> when the last hold on it ends (epoch ms; box 1 for
    # A and B, hour 0 for A): what "held until" says of a cell.
    held_until: dict[int, dict[tuple[int, int], int]] = field(default_factory=dict)
    closed: dict[int, int] = field(default_factory=dict)  # room -> hours closed (A: any: 1)

    def until(self, room: int, box: int, hours: Sequence[int]) -> dt.datetime | None:
        """When the last hold on `box` (1 for A and B) during `hours` ends, or None."""
        ends = self.held_until.get(room, {})
        found = [ends[(box, h)] for h in hours if (box, h) in ends]
        return from_ms(max(found)) if found else None


def _masks(cls: str, value: bytes) -> tuple[int, ...]:
    if cls == "A":
        return (value[0],)
    return tuple(box_mask(value, box if cls == "C" else None) for box in _BOXES[cls])


_BOXES = {"A": (None,), "B": (None,), "C": tuple(range(1, BOXES_PER_ROOM + 1))}


def _held(
    days: RoomDays, cls: str, day: int, booked: tuple[int, ...]
) -> tuple[tuple[int, ...], dict[tuple[int, int], int]]:
    """A room's held-not-booked masks (the shape of `booked`) and each held cell's end."""
    held = [0] * len(booked)
    ends: dict[tuple[int, int], int] = {}
    for hold in days.holds.get(day, ()):
        for box in hold.boxes if cls == "C" else (1,):
            if not 1 <= box <= len(booked):
                continue
            mask = hold.mask & ~booked[box - 1]
            held[box - 1] |= mask
            for hour in range(HOURS_PER_DAY) if cls != "A" else (0,):
                if cls == "A" or mask & (1 << (23 - hour)):
                    key = (box, hour)
                    ends[key] = max(ends.get(key, 0), hold.expires_ms)
    return tuple(held), ends


def day_inventory(
    *, client: redis.Redis, cls: str, date: dt.date, now: dt.datetime | None = None
) -> DayInventory:
    """What is booked, held and closed of one class on one day (any day: the bitmaps are by
    calendar month), room by room: the read every availability page is built on
    (`room_read.rooms_read`, ONE round trip; an absent bitmap reads as all free), so that the
    staff map and the buyers' agree on what is free."""
    if cls not in CLASSES:
        raise ValueError(f"no class {cls!r}")
    rooms = range(1, room_count() + 1)
    day = calendar_day(date)
    booked: dict[int, tuple[int, ...]] = {}
    held: dict[int, tuple[int, ...]] = {}
    ends: dict[int, dict[tuple[int, int], int]] = {}
    closed: dict[int, int] = {}
    for read in rooms_read(client=client, cls=cls, rooms=rooms, dates=[date], now=now):
        masks = booked[read.room] = _masks(cls, read.booked[day])
        if read.holds.get(day):
            held[read.room], ends[read.room] = _held(read, cls, day, masks)
        shut = 0
        for mask, _reason in read.closures.get(day, ()):
            shut |= 1 if cls == "A" else mask
        if shut:
            closed[read.room] = shut
    return DayInventory(cls, date, booked, held, ends, closed)
