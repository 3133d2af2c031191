"""The source's design, kept only as a control: read-modify-write of JSON in a hash.

Class A: hash `A:<room>` date -> 1; class B: hash `B:<room>` date -> 24-bit hour mask;
class C: hash `C:<room>` date -> JSON array of 100 hour masks. A claim reads the value into the
application (HGET), checks and ORs its bits, and writes it back (HSET). Two buyers at the same
moment can both "win", or one can erase the other's bits. Never used by the product; its keys
live under `bench:naive:` (outside the keyspace on purpose, so they can never meet real data).
"""

from __future__ import annotations

import json
import time

import redis

PREFIX = "bench:naive"


def naive_key(cls: str, room: int) -> str:
    return f"{PREFIX}:{cls}:{room}"


def hour_mask(start: int, end: int) -> int:
    return sum(1 << (23 - hour) for hour in range(start, end))


def naive_claim(
    client: redis.Redis,
    *,
    cls: str,
    room: int,
    dates: list[str],
    hours: tuple[int, int] | None = None,
    boxes: list[int] | None = None,
    pause: float = 0.0,
) -> bool:
    """Check then take, in the application: True when this buyer believes it booked."""
    key = naive_key(cls, room)
    mask = 1 if cls == "A" else hour_mask(*(hours or (0, 0)))
    values: dict[str, object] = {}
    for date in dates:
        raw = client.hget(key, date)
        if cls == "C":
            masks = json.loads(raw) if raw else [0] * 100
            if any(masks[box - 1] & mask for box in boxes or []):
                return False
            values[date] = masks
        else:
            current = int(raw or 0)
            if current & mask:
                return False
            values[date] = current
    if pause:
        time.sleep(pause)  # the window every real request has (network, GC, a busy worker)
    for date, value in values.items():
        if cls == "C":
            assert isinstance(value, list)
            for box in boxes or []:
                value[box - 1] |= mask
            client.hset(key, date, json.dumps(value, separators=(",", ":")))
        else:
            assert isinstance(value, int)
            client.hset(key, date, str(value | mask))
    return True


def naive_flush(client: redis.Redis) -> None:
    for key in client.scan_iter(match=f"{PREFIX}:*", count=1000):
        client.delete(key)
