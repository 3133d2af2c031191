"""Shared helpers of the booking tests: named people, a frozen site clock, requests."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import redis

from booking.domain.keys import RoomKeys
from booking.domain.parser import SlotRequest, slot_request_parse
from booking.domain.rules import (
    BOXES_PER_ROOM,
    HOURS_PER_DAY,
    booking_new_id,
    season_end,
    season_start,
)
from booking.engine.claims import ClaimResult, booking_claim
from booking.slots.panel_state import CalendarDay, panel_state
from strongroom.decoders import text

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


def booked_id(client: redis.Redis, owner: Any, **fields: Any) -> str:
    """The id of a booking `owner` (a person: anything with an `id`) made of the request
    `fields` (as the form names them, dates as dates), at the clock's now."""
    made = booking_claim(
        client=client, owner_id=str(owner.id),
        request=slot_request_parse(**fields), booking_id=booking_new_id(room=fields["room"]),
    )  # fmt: skip
    assert made.ok and made.booking is not None, made
    return made.booking.id


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


# --- reads through the one read model of a room (booking.slots.panel_state) -----------------


def calendar_days(
    *,
    client: redis.Redis,
    cls: str,
    room: int,
    hours: tuple[int, int] | None = None,
    boxes: Sequence[int] = (),
    owner_id: str | None = None,
    now: dt.datetime | None = None,
    start: dt.date | None = None,
    end: dt.date | None = None,
) -> list[CalendarDay]:
    """The booking page's calendar of one room from `start` to `end` (the season): each day's
    word (available, partly, held, sold_for, sold_out, not_bookable) for the choice."""
    first, last = start or season_start(), end or season_end()
    calendar = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
    found = panel_state(
        client=client, cls=cls, room=room, calendar=calendar, hours=hours, boxes=boxes,
        owner_id=owner_id, now=now,
    )  # fmt: skip
    return list(found.days)


def free_hours(
    *, client: redis.Redis, room: int, date: dt.date, cls: str, owner_id: str | None = None
) -> list[int]:
    """The hours of `date` the booking page offers: class B free, class C with a free box."""
    taken = panel_state(
        client=client, cls=cls, room=room, calendar=[], dates=[date], owner_id=owner_id
    ).taken_hours
    return [hour for hour in range(HOURS_PER_DAY) if hour not in taken]


def free_boxes(
    *,
    client: redis.Redis,
    room: int,
    date: dt.date,
    hours: tuple[int, int],
    owner_id: str | None = None,
    now: dt.datetime | None = None,
) -> list[int]:
    """The class C boxes of `date` the booking page offers for every hour of `hours`."""
    taken = panel_state(
        client=client, cls="C", room=room, calendar=[], dates=[date], hours=hours,
        owner_id=owner_id, now=now,
    ).taken_boxes  # fmt: skip
    return [box for box in range(1, BOXES_PER_ROOM + 1) if box not in taken]


def booked_b_slots(client: redis.Redis, rooms: Iterable[int]) -> set[tuple[int, int, int]]:
    """(room, day index, hour) of every booked bit of the rooms' class B bitmaps of December
    2026, the test season."""
    found = set()
    for room in rooms:
        key = RoomKeys(room).inventory("B", "2026-12")
        if not client.exists(key):
            continue
        reads = [x for d in range(31) for x in ("GET", "u24", d * 24)]
        for day, mask in enumerate(client.execute_command("BITFIELD_RO", key, *reads)):
            found |= {(room, day, h) for h in range(24) if int(mask) >> (23 - h) & 1}
    return found
