"""Shared helpers of the booking tests: named people, a frozen site clock, requests."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Callable
from typing import Any

import redis

from booking.domain.parser import SlotRequest, slot_request_parse
from booking.domain.rules import booking_new_id
from booking.engine.claims import ClaimResult, booking_claim
from strongroom.store import text

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
# 10:00 in the site's zone, ten days before the tests' season (2026-12-01..31).
NOW = dt.datetime(2026, 11, 21, 10, 0, tzinfo=SHANGHAI)
BUYER = "101"
SECOND_BUYER = "102"
STAFF = "900"


def day(n: int) -> dt.date:
    """December n of the tests' season."""
    return dt.date(2026, 12, n)


def request(cls: str = "A", room: int = 7, dates: Any = (3,), **extra: Any) -> SlotRequest:
    """A valid request, dates given as December day numbers."""
    return slot_request_parse(cls=cls, room=room, dates=[day(d) for d in dates], now=NOW, **extra)


def claim(client: redis.Redis, req: SlotRequest, owner: str = BUYER, **extra: Any) -> ClaimResult:
    return booking_claim(
        client=client, owner_id=owner, request=req,
        booking_id=booking_new_id(room=req.room), now=NOW, **extra,
    )  # fmt: skip


def product_keys(client: redis.Redis) -> list[str]:
    return sorted(client.scan_iter(match="sr:*", count=1000))


def snapshot(client: redis.Redis) -> dict[str, object]:
    """Every product key with its type and content (order-independent), to prove no write."""
    content: dict[str, object] = {}
    for key in product_keys(client):
        kind = text(client.type(key))
        readers: dict[str, Callable[[str], object]] = {
            "hash": client.hgetall,
            "set": client.smembers,
            "zset": lambda k: client.zrange(k, 0, -1, withscores=True),
            "stream": client.xrange,
            "list": lambda k: client.lrange(k, 0, -1),
        }
        value = readers[kind](key) if kind in readers else client.dump(key)
        content[key] = (kind, value)
    return content
