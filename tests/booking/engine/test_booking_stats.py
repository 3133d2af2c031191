"""The rooms' stats hashes: the counters the functions keep equal the figures recomputed from
the booking records and the inventory bitmaps, after random claims, cancels, pickups, retries
and a flush; a rebuild from records + bitmaps gives the very same hashes; data written before
the stats existed is counted once read."""

from __future__ import annotations

import datetime as dt
import random

import pytest
import redis
import time_machine
from django.core.management import call_command

from booking.domain.keys import RoomKeys
from booking.domain.records import Booking
from booking.domain.rules import CLASSES, SLOTS_PER_DAY, booking_new_id, request_id_new
from booking.engine import stats
from booking.engine.bookings import bookings_between
from booking.engine.cancel import booking_cancel
from booking.engine.claims import booking_claim
from booking.engine.maintenance import inventory_flush
from booking.engine.pickup import booking_pickup
from booking.engine.stats import (
    occupancy_from_bitmaps,
    occupancy_per_day,
    season_stats,
    stats_rebuild,
)
from strongroom.decoders import text_hash, text_list
from strongroom.store import primaries, round_trips
from tests.booking_support import NOW, SHANGHAI, STAFF, day, request

ROOMS = (3, 4, 150)
OWNERS = ("101", "102", "103")


def records(client: redis.Redis) -> list[Booking]:
    """Every booking of the season, straight from the records (through the date index)."""
    return bookings_between(client=client, start=day(1), end=day(31), limit=100_000)


def expected(client: redis.Redis, today: dt.date) -> dict[str, tuple[object, ...]]:
    """Per class: statuses, active bookings per day, for today, made today, booked slots per
    day, all recomputed from the records and the bitmaps (BITCOUNT)."""
    found = records(client)
    figures: dict[str, tuple[object, ...]] = {}
    for cls in CLASSES:
        mine = [b for b in found if b.cls == cls]
        active = [b for b in mine if b.status != "cancelled"]
        per_day = tuple(sum(day(n) in b.dates for b in active) for n in range(1, 32))
        statuses = {s: sum(b.status == s for b in mine) for s in stats.STATUSES}
        made = sum(b.created_at.astimezone(SHANGHAI).date() == today for b in active)
        bits = occupancy_from_bitmaps(client=client, cls=cls)
        figures[cls] = (
            statuses,
            per_day,
            sum(today in b.dates for b in active),
            made,
            tuple(d.booked for d in bits.days),
            bits.booked,
        )
    return figures


def counted(client: redis.Redis, now: dt.datetime) -> dict[str, tuple[object, ...]]:
    """The same figures from the stats counters (season_stats)."""
    stats = season_stats(client=client, now=now)
    return {
        c.cls: (
            c.statuses,
            c.active_per_day,
            c.for_today,
            c.made_today,
            tuple(d.booked for d in c.occupancy.days),
            c.occupancy.booked,
        )
        for c in stats.classes
    }


def stats_hashes(client: redis.Redis) -> dict[int, dict[str, str]]:
    return {room: text_hash(client.hgetall(RoomKeys(room).stats)) for room in ROOMS}


def assert_exact(client: redis.Redis, now: dt.datetime) -> None:
    today = now.astimezone(SHANGHAI).date()
    assert counted(client, now) == expected(client, today)
    for cls in CLASSES:
        assert occupancy_per_day(client=client, cls=cls) == occupancy_from_bitmaps(
            client=client, cls=cls
        )
    # Recomputing every room's hash from its records and bitmaps changes nothing.
    before = stats_hashes(client)
    stats_rebuild(client=client)
    after = stats_hashes(client)
    for room in ROOMS:
        changed = {
            k: (before[room].get(k), after[room].get(k))
            for k in set(before[room]) | set(after[room])
            if before[room].get(k) != after[room].get(k)
        }
        assert not changed, (room, changed)


def random_request(rng: random.Random) -> tuple[str, int, list[int], dict[str, object]]:
    cls = rng.choice(CLASSES)
    room = rng.choice(ROOMS)
    dates = sorted(rng.sample(range(1, 32), rng.choice((1, 1, 2, 3))))
    extra: dict[str, object] = {}
    if cls != "A":
        start = rng.randrange(0, 23)
        extra = {"hour_start": start, "hour_end": rng.randrange(start + 1, min(24, start + 4) + 1)}
    if cls == "C":
        extra["boxes"] = ",".join(str(b) for b in rng.sample(range(1, 101), rng.choice((1, 2, 5))))
    return cls, room, dates, extra


def pickup_moment(booking: Booking, date: dt.date) -> dt.datetime:
    hour = booking.hours[0] if booking.hours else 12
    return dt.datetime.combine(date, dt.time(hour, 5), tzinfo=SHANGHAI)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_counters_equal_the_records_and_bitmaps_after_random_work(
    r: redis.Redis, seed: int
) -> None:
    rng = random.Random(seed)
    made: list[Booking] = []
    days_of_sales = [NOW - dt.timedelta(days=1), NOW]
    for _ in range(120):
        cls, room, dates, extra = random_request(rng)
        now = rng.choice(days_of_sales)
        req = request(cls, room, dates, **extra)
        booking_id = booking_new_id(room=room)
        owner = rng.choice(OWNERS)
        result = booking_claim(
            client=r, owner_id=owner, request=req, booking_id=booking_id, now=now
        )
        if rng.random() < 0.3:  # a retry (double click, redis-py): the same booking, counted once
            again = booking_claim(
                client=r, owner_id=owner, request=req, booking_id=booking_id, now=now
            )
            assert again.ok == result.ok
        if result.booking is not None:
            made.append(result.booking)
    assert len(made) > 40
    assert_exact(r, NOW)

    rng.shuffle(made)
    for booking in made[:15]:  # cancels, some by the owner, some retried with the same id
        request_id = request_id_new()
        for _ in range(rng.choice((1, 2))):
            done = booking_cancel(
                client=r, booking_id=booking.id, actor_id=booking.owner_id,
                actor_is_staff=False, now=NOW, request_id=request_id,
            )  # fmt: skip
            assert done.outcome == "cancelled"
    assert (
        booking_cancel(
            client=r, booking_id=made[0].id, actor_id=STAFF, actor_is_staff=True, now=NOW
        ).outcome
        == "already_cancelled"
    )
    for booking in made[15:35]:  # pickups of the first day, or of every day, some retried
        days = booking.dates if rng.random() < 0.5 else booking.dates[:1]
        for date in days:
            attempt = request_id_new()
            moment = pickup_moment(booking, date)
            for _ in range(rng.choice((1, 2))):
                got = booking_pickup(
                    client=r, room=booking.room, code=booking.pickup_code(), now=moment,
                    attempt_id=attempt,
                )  # fmt: skip
                assert got.outcome == "collected", got.outcome
    statuses = {b.status for b in records(r)}
    assert statuses == {"confirmed", "cancelled", "collected"}
    assert_exact(r, NOW)
    assert_exact(r, NOW - dt.timedelta(days=1))
    with time_machine.travel(dt.datetime(2026, 12, 3, 9, 0, tzinfo=SHANGHAI), tick=False):
        assert_exact(r, dt.datetime(2026, 12, 3, 9, 0, tzinfo=SHANGHAI))

    flushed = inventory_flush(client=r, actor_id=STAFF, reason="season over")
    assert flushed.bookings_cancelled > 0
    assert_exact(r, NOW)
    assert all(c.occupancy.booked == 0 for c in season_stats(client=r, now=NOW).classes)
    # Claims after the flush start from the emptied bitmaps.
    for _ in range(10):
        cls, room, dates, extra = random_request(rng)
        booking_claim(
            client=r, owner_id=OWNERS[0], request=request(cls, room, dates, **extra),
            booking_id=booking_new_id(room=room), now=NOW,
        )  # fmt: skip
    assert_exact(r, NOW)


def test_season_stats_is_one_round_trip_whatever_the_bookings(r: redis.Redis) -> None:
    booking_claim(
        client=r, owner_id="101", request=request("B", 3, (3,), hour_start=8, hour_end=12),
        booking_id=booking_new_id(room=3), now=NOW,
    )  # fmt: skip
    with round_trips() as few:
        season_stats(client=r, now=NOW)
    for room in range(20, 80):
        booking_claim(
            client=r, owner_id="101", request=request("C", room, (3, 4), hour_start=1,
            hour_end=23, boxes="1,2"), booking_id=booking_new_id(room=room), now=NOW,
        )  # fmt: skip
    with round_trips() as many:
        stats = season_stats(client=r, now=NOW)
    assert few.count == many.count == len(primaries(r))  # one round trip per primary
    c = stats.classes[2]
    assert c.statuses["confirmed"] == 60 and c.made_today == 60
    assert c.occupancy.booked == 60 * 2 * 22 * 2
    assert c.occupancy.capacity == SLOTS_PER_DAY["C"] * 300 * 31


def _forget_stats(client: redis.Redis) -> None:
    """The store as it was before the stats existed: no stats hashes, no 'made' in records."""
    for room in range(1, 301):
        keys = RoomKeys(room)
        client.delete(keys.stats)
        for booking_id in text_list(list(client.smembers(keys.ledger))):
            client.hdel(keys.record(booking_id), "made")


def test_bookings_written_before_the_stats_existed_are_counted_when_read(
    r: redis.Redis,
) -> None:
    rng = random.Random(7)
    for _ in range(30):
        cls, room, dates, extra = random_request(rng)
        booking_claim(
            client=r, owner_id="101", request=request(cls, room, dates, **extra),
            booking_id=booking_new_id(room=room), now=NOW,
        )  # fmt: skip
    first = records(r)[0]
    booking_cancel(client=r, booking_id=first.id, actor_id=STAFF, actor_is_staff=True, now=NOW)
    _forget_stats(r)
    # A claim into a room with old bookings does not make its stats look exact.
    booking_claim(
        client=r, owner_id="102", request=request("A", first.room, (31,)),
        booking_id=booking_new_id(room=first.room), now=NOW,
    )  # fmt: skip
    assert r.hget(RoomKeys(first.room).stats, "v") is None
    assert_exact(r, NOW)  # the read rebuilds the rooms that need it, then counts them
    # rebuildindexes rebuilds them too (an existing store after this change).
    _forget_stats(r)
    call_command("rebuildindexes")
    rebuilt = {room: r.hget(RoomKeys(room).stats, "v") for room in ROOMS}
    assert rebuilt == dict.fromkeys(ROOMS, "1")
    assert_exact(r, NOW)


def test_today_counts_on_the_pickup_day_when_the_window_starts_tomorrow(
    r: redis.Redis, settings: object
) -> None:
    """A rolling sales window starts tomorrow, so today is never in it; the overview's "for
    today" still counts the bookings picked up today (it read 0 whatever was booked)."""
    settings.STRONGROOM_SEASON_START = settings.STRONGROOM_SEASON_END = None  # type: ignore[attr-defined]
    for cls, extra in (("A", {}), ("B", {"hour_start": 8, "hour_end": 10})):
        booking_claim(
            client=r, owner_id=OWNERS[0], request=request(cls, 7, (3,), **extra),
            booking_id=booking_new_id(room=7), now=NOW,
        )  # fmt: skip
    booking_claim(
        client=r, owner_id=OWNERS[1], request=request("A", 8, (4,)),
        booking_id=booking_new_id(room=8), now=NOW,
    )  # fmt: skip
    for on, counts in ((3, {"A": 1, "B": 1, "C": 0}), (4, {"A": 1, "B": 0, "C": 0})):
        at = dt.datetime(2026, 12, on, 9, 0, tzinfo=SHANGHAI)
        with time_machine.travel(at, tick=False):
            figures = season_stats(client=r, now=at)
        assert {c.cls: c.for_today for c in figures.classes} == counts
