"""The inventory bitmaps as Python reads them: the layout (booking.lua writes the same one:
class A one bit a day, B a 24-bit hour mask a day, C 100 such masks a day, hour 0 in the top
bit), reading days of one room with other buyers' holds added, and building-wide reads (the
registry of inventory keys, one day of every room)."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import redis
from redis.client import NEVER_DECODE

from booking.domain.keys import RoomKeys
from booking.domain.records import hold_value_parse
from booking.domain.rules import (
    BOXES_PER_ROOM,
    CLASSES,
    HOURS_PER_DAY,
    hour_mask,
    in_season,
    room_count,
    season_day,
)
from strongroom import keyspace as ks
from strongroom.clock import to_ms

FULL = (1 << HOURS_PER_DAY) - 1


@dataclass(frozen=True)
class InventoryKey:
    key: str
    room: int
    cls: str
    season: str


def field_offsets(cls: str, day: int, boxes: Sequence[int]) -> list[int]:
    if cls == "A":
        return [day]
    if cls == "B":
        return [day * HOURS_PER_DAY]
    return [(day * BOXES_PER_ROOM + box - 1) * HOURS_PER_DAY for box in boxes]


def _held_masks(
    holds: dict[str, str], cls: str, owner_id: str | None, now_ms: int
) -> dict[tuple[int, int], int]:
    """(day, box) -> hour mask (1 for A) held by other buyers' unexpired holds."""
    held: dict[tuple[int, int], int] = {}
    for value in holds.values():
        expiry, owner, hold_cls, days, start, end, boxes = hold_value_parse(value)
        if expiry <= now_ms or hold_cls != cls or (owner_id is not None and owner == owner_id):
            continue
        mask = 1 if cls == "A" else hour_mask(start, end)
        for day in days:
            for box in boxes if cls == "C" else [0]:
                held[(day, box)] = held.get((day, box), 0) | mask
    return held


# A day's taken slots as the bitmap stores them (hour 0 in the top bit of each 24-bit mask):
# class C 300 bytes (box 1 first), class B 3 bytes; class A is given one byte, 0 or 1.
_DAY_BYTES = {"A": 1, "B": 3, "C": BOXES_PER_ROOM * 3}


def _runs(days: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted season days as runs of consecutive days: (first, last) each."""
    runs: list[tuple[int, int]] = []
    for day in days:
        if runs and runs[-1][1] == day - 1:
            runs[-1] = (runs[-1][0], day)
        else:
            runs.append((day, day))
    return runs


def _held_into(cls: str, taken: dict[int, bytes], held: dict[tuple[int, int], int]) -> None:
    """Add other buyers' held slots to the days read, in place."""
    for (day, box), mask in held.items():
        if day not in taken:
            continue
        if cls == "A":
            taken[day] = b"\x01"
            continue
        at = (box - 1) * 3 if cls == "C" else 0
        value = bytearray(taken[day])
        value[at : at + 3] = (int.from_bytes(value[at : at + 3]) | mask).to_bytes(3)
        taken[day] = bytes(value)


def read_days(
    client: redis.Redis,
    cls: str,
    room: int,
    days: Sequence[int],
    owner_id: str | None,
    now: dt.datetime | None,
) -> dict[int, bytes]:
    """Season day -> its taken slots (booked, or held by another buyer's unexpired hold) as
    bytes (see _DAY_BYTES), in one round trip: one GETRANGE of raw bytes per run of
    consecutive days (a month of class C is 9,300 bytes), and the room's holds."""
    keys = RoomKeys(room)
    width = _DAY_BYTES[cls]
    runs = _runs(sorted(set(days)))
    pipe = client.pipeline(transaction=False)
    for first, last in runs:
        if cls == "A":  # one bit per day
            start, end = first // 8, last // 8
        else:
            start, end = first * width, (last + 1) * width - 1
        raw = {NEVER_DECODE: True}  # bytes, whatever the client's decode_responses
        pipe.execute_command("GETRANGE", keys.inventory(cls), start, end, **raw)
    pipe.hgetall(keys.holds)
    *chunks, holds = pipe.execute()
    taken: dict[int, bytes] = {}
    for (first, last), chunk in zip(runs, chunks, strict=True):
        if cls == "A":  # a missing key or a short bitmap reads as free
            for day in range(first, last + 1):
                at = day // 8 - first // 8
                taken[day] = bytes((chunk[at] >> (7 - day % 8) & 1 if at < len(chunk) else 0,))
            continue
        chunk = chunk.ljust((last - first + 1) * width, b"\0")
        for day in range(first, last + 1):
            at = (day - first) * width
            taken[day] = chunk[at : at + width]
    _held_into(
        cls, taken, _held_masks(holds, cls, owner_id, to_ms(now or dt.datetime.now(tz=dt.UTC)))
    )
    return taken


def mask_of(cls: str, day: bytes, box: int) -> int:
    """One slot's mask from a day's bytes: the hour mask of box `box` (C), of the safe (B),
    or 0/1 (A)."""
    if cls == "C":
        return int.from_bytes(day[(box - 1) * 3 : box * 3])
    return int.from_bytes(day)


@functools.cache
def _touch_table(part: int) -> bytes:
    """bytes.translate table: a byte -> 1 if it has a bit of `part`, else 0."""
    return bytes(1 if value & part else 0 for value in range(256))


_FULL_TABLE = bytes(1 if value == 0xFF else 0 for value in range(256))


def boxes_touching(day: bytes, mask: int) -> bytes:
    """Class C: one byte per box (box 1 first), non-zero when the box is taken in an hour of
    `mask`. Computed column by column (the first, second and third byte of every box's mask)
    with bytes.translate, so a day's 100 boxes take a few C calls, not 100 Python steps."""
    touching = 0
    for column in range(3):
        part = mask >> (16 - 8 * column) & 0xFF
        if part:
            touching |= int.from_bytes(day[column::3].translate(_touch_table(part)))
    return touching.to_bytes(BOXES_PER_ROOM)


def boxes_full(day: bytes) -> bytes:
    """Class C: one byte per box, non-zero when the box is taken every hour of the day."""
    full = -1
    for column in range(3):
        full &= int.from_bytes(day[column::3].translate(_FULL_TABLE))
    return full.to_bytes(BOXES_PER_ROOM)


def read_slots(
    client: redis.Redis,
    cls: str,
    room: int,
    days: Sequence[int],
    boxes: Sequence[int],
    owner_id: str | None,
    now: dt.datetime | None,
) -> dict[tuple[int, int], int]:
    """(day, box) -> taken mask (booked or held by others), in one round trip."""
    taken = read_days(client, cls, room, days, owner_id, now)
    return {
        (day, box): mask_of(cls, taken[day], box)
        for day in days
        for box in (boxes if cls == "C" else [0])
    }


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
            found.append(InventoryKey(key, int(parts["room"]), parts["cls"], parts["season"]))
    return found


@dataclass(frozen=True)
class DayInventory:
    """The booked slots of one class on one day in every room: room -> one 24-bit hour mask per
    box (class C: 100 of them, box 1 first), one mask for class B, and 0/1 for class A."""

    cls: str
    date: dt.date
    rooms: dict[int, tuple[int, ...]]


def day_inventory(*, client: redis.Redis, cls: str, date: dt.date) -> DayInventory:
    """What is booked of one class on one season day, room by room (one pipeline of
    BITFIELD_RO per room; an absent bitmap reads as all free)."""
    if cls not in CLASSES:
        raise ValueError(f"no class {cls!r}")
    if not in_season(date):
        raise ValueError(f"{date} is outside the season")
    day = season_day(date)
    kind = "u1" if cls == "A" else "u24"
    offsets = field_offsets(cls, day, range(1, BOXES_PER_ROOM + 1))
    rooms = range(1, room_count() + 1)
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        args: list[object] = []
        for offset in offsets:
            args += ["GET", kind, offset]
        pipe.execute_command("BITFIELD_RO", RoomKeys(room).inventory(cls), *args)
    masks = {
        room: tuple(int(v) for v in values)
        for room, values in zip(rooms, pipe.execute(), strict=True)
    }
    return DayInventory(cls, date, masks)
