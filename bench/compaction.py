"""`python -m bench.compaction`: the store's memory after a simulated year of inventory, before
and after past days are compacted, against the bit count.

On its own embedded Valkey in a temporary directory: 365 days from --start, every room, every
class, about 30 % of each class's slots sold, written in the calendar layout (one bitmap per
room, class and month, made at full size as the claim function makes it; the bits themselves
are drawn at random, as thousands of claims would leave them). Then `past_compact` runs as on
the day after the year's end (every month's pickups over) and the memory is measured again.
Records, audit and statistics are not simulated: they stay for STRONGROOM_RETENTION_DAYS and
are not part of the bitmaps' figure."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import tempfile
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "strongroom.settings")
os.environ.setdefault("DEBUG", "1")

import django

django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402

from booking.domain.keys import RoomKeys  # noqa: E402
from booking.domain.rules import (  # noqa: E402
    CLASSES,
    SLOTS_PER_DAY,
    month_bytes,
    month_first,
    month_length,
)
from booking.engine.compaction import past_compact  # noqa: E402
from strongroom import embedded, store  # noqa: E402

SHANGHAI_NOON = dt.time(12)


def sold_bytes(size: int, rng: random.Random) -> bytes:
    """`size` random bytes with about 30 % of their bits set: (a & b) | (c & d & e & f)."""
    bits = size * 8

    def draw() -> int:
        return rng.getrandbits(bits)

    value = (draw() & draw()) | (draw() & draw() & draw() & draw())
    return value.to_bytes(size)


def months_of(start: dt.date, days: int) -> list[tuple[dt.date, int, int]]:
    """(month, first day of the month in the run, days of the run in it) for `days` days."""
    found: dict[dt.date, list[int]] = {}
    for n in range(days):
        date = start + dt.timedelta(days=n)
        found.setdefault(month_first(date), []).append(date.day)
    return [(m, min(d) - 1, len(d)) for m, d in sorted(found.items())]


def year_write(client: redis.Redis, start: dt.date, days: int, seed: int) -> int:
    """Write the simulated year; returns the number of slot bits it covers."""
    rng = random.Random(seed)
    bits = 0
    for room in range(1, settings.STRONGROOM_ROOM_COUNT + 1):
        keys = RoomKeys(room)
        pipe = client.pipeline(transaction=False)
        for month, first_day, n_days in months_of(start, days):
            for cls in CLASSES:
                size = month_bytes(cls, month)
                data = bytearray(size)
                width = SLOTS_PER_DAY[cls]
                if cls == "A":
                    for day in range(first_day, first_day + n_days):
                        if rng.random() < 0.3:
                            data[day // 8] |= 1 << (7 - day % 8)
                else:
                    at, end = first_day * width // 8, (first_day + n_days) * width // 8
                    data[at:end] = sold_bytes(end - at, rng)
                pipe.set(keys.inventory(cls, month), bytes(data))
                pipe.sadd(keys.registry, keys.inventory(cls, month))
                bits += n_days * width
        pipe.execute()
    return bits


def used(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--start", type=dt.date.fromisoformat, default=dt.date(2027, 1, 1))
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--seed", type=int, default=30)
    options = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="sr-bench-compaction-"))
    try:
        client = store.connect(embedded.ensure_running(data_dir))
        client.flushall()
        empty = used(client)
        bits = year_write(client, options.start, options.days, options.seed)
        full = used(client)
        sample = RoomKeys(1).inventory("C", month_first(options.start))
        one_month = int(client.memory_usage(sample) or 0)
        month_bits = month_length(options.start) * SLOTS_PER_DAY["C"]
        end = options.start + dt.timedelta(days=options.days)
        done = past_compact(
            client=client,
            now=dt.datetime.combine(end + dt.timedelta(days=1), SHANGHAI_NOON, tzinfo=dt.UTC),
        )
        after = used(client)
        rooms = settings.STRONGROOM_ROOM_COUNT
        print(
            f"Simulated year: {options.days} days from {options.start}, {rooms} rooms, classes "
            f"A, B, C, ~30 % of every class sold\n"
            f"  slot bits:                    {bits:>14,} ({bits // 8:,} bytes)\n"
            f"  store memory, empty:          {empty:>14,} bytes\n"
            f"  store memory, the year held:  {full:>14,} bytes "
            f"({(full - empty) / (bits / 8):.3f} x the bit count)\n"
            f"  one class C month bitmap:     {one_month:>14,} bytes for {month_bits:,} bits "
            f"({one_month / (month_bits / 8):.3f} x)\n"
            f"  compaction (the day after):   {done.bitmaps:,} month bitmaps dropped\n"
            f"  store memory, compacted:      {after:>14,} bytes "
            f"({(after - empty) / (bits / 8):.3f} x the bit count above empty)"
        )
    finally:
        embedded.stop(data_dir)


if __name__ == "__main__":
    main()
