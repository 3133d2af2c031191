"""The inventory bitmap's layout as Python reads it (the booking Lua writes the same one): class A
one bit a day; class B a 24-bit hour mask a day; class C 100 such masks a day, box 1 first. Hour
0 is the top bit of a mask. Whole days are read as bytes (GETRANGE), and a class C day's 100
boxes are looked at together with bytes.translate rather than 100 Python steps."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from booking.domain.rules import BOXES_PER_ROOM, HOURS_PER_DAY

FULL_DAY = (1 << HOURS_PER_DAY) - 1  # every hour of a day
MASK_BYTES = HOURS_PER_DAY // 8  # one 24-bit hour mask
# Bytes of one day of a class in a room's bitmap; class A is read by the byte (8 days a byte)
# and given as one byte, 0 or 1, per day.
DAY_BYTES = {"A": 1, "B": MASK_BYTES, "C": BOXES_PER_ROOM * MASK_BYTES}


def day_runs(days: Sequence[int]) -> list[tuple[int, int]]:
    """Days (of one month, from 0) as runs of consecutive days (first, last): one GETRANGE each."""
    runs: list[tuple[int, int]] = []
    for day in sorted(set(days)):
        if runs and runs[-1][1] == day - 1:
            runs[-1] = (runs[-1][0], day)
        else:
            runs.append((day, day))
    return runs


def run_bytes(cls: str, first: int, last: int) -> tuple[int, int]:
    """The byte range (start, end, inclusive) of a run of days of `cls` in a room's month bitmap."""
    if cls == "A":
        return first // 8, last // 8
    width = DAY_BYTES[cls]
    return first * width, (last + 1) * width - 1


def day_of_run(cls: str, chunk: bytes, first: int, day: int) -> bytes:
    """One day's bytes out of the bytes read for the run starting at `first` (missing bytes, a
    bitmap shorter than its month, read as free)."""
    if cls == "A":
        at = day // 8 - first // 8
        return bytes((chunk[at] >> (7 - day % 8) & 1 if at < len(chunk) else 0,))
    width = DAY_BYTES[cls]
    at = (day - first) * width
    return chunk[at : at + width].ljust(width, b"\0")


def box_mask(day: bytes, box: int | None) -> int:
    """The hour mask of one class C box, or of a class B day (`box` None)."""
    if box is None:
        return int.from_bytes(day)
    return int.from_bytes(day[(box - 1) * MASK_BYTES : box * MASK_BYTES])


def with_mask(day: bytes, box: int | None, mask: int) -> bytes:
    """`day` with `mask` added to a box's hours (or to a class B day's)."""
    at = (box - 1) * MASK_BYTES if box is not None else 0
    taken = bytearray(day)
    taken[at : at + MASK_BYTES] = (box_mask(day, box) | mask).to_bytes(MASK_BYTES)
    return bytes(taken)


@functools.cache
def _touch_table(part: int) -> bytes:
    """bytes.translate table: a byte -> 1 if it shares a bit with `part`, else 0."""
    return bytes(1 if value & part else 0 for value in range(256))


_FULL_TABLE = bytes(1 if value == 0xFF else 0 for value in range(256))


def boxes_touched(day: bytes, mask: int) -> int:
    """Class C: a 100-byte big integer, byte b-1 non-zero when box b is booked in an hour of
    `mask` (three bytes.translate calls, one per byte of the boxes' 24-bit masks)."""
    touched = 0
    for column in range(MASK_BYTES):
        part = mask >> (16 - 8 * column) & 0xFF
        if part:
            touched |= int.from_bytes(day[column::MASK_BYTES].translate(_touch_table(part)))
    return touched


def boxes_full(day: bytes) -> int:
    """Class C: a 100-byte big integer, byte b-1 non-zero when box b is taken all day."""
    full = -1
    for column in range(MASK_BYTES):
        full &= int.from_bytes(day[column::MASK_BYTES].translate(_FULL_TABLE))
    return full


def box_flags(value: int) -> bytes:
    """A 100-byte big integer as one byte per box (box 1 first)."""
    return value.to_bytes(BOXES_PER_ROOM)


def hours_in(mask: int, hours: range = range(HOURS_PER_DAY)) -> list[int]:
    """The hours of `hours` set in a 24-bit mask."""
    return [h for h in hours if mask & (1 << (HOURS_PER_DAY - 1 - h))]
