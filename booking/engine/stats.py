"""The rooms' stats counters (kept exact by the functions in the booking Lua): the season's figures
read from them, the same figures counted from the bitmaps (the check), and the rebuild of a
room's counters from its records and bitmaps.

Reading rooms whose counters are not exact yet (data written before the stats existed) is two
explicit steps in `_stats_rows`: the read finds them, `stats_rebuild` rebuilds them, then they
are read again."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import redis
from django.conf import settings

from booking.domain.closures import Closure, closures_parse
from booking.domain.formats import DAY_WIDTH, STATS_VERSION, request_months, stats_field
from booking.domain.keys import RoomKeys
from booking.domain.rules import (
    CLASSES,
    SLOTS_PER_DAY,
    STATUSES,
    local_now,
    month_first,
    month_length,
    month_name,
    room_count,
    season_days,
    site_today,
)
from booking.engine.bookings import room_sets_read
from booking.engine.closures import closed_slots
from strongroom import keyspace as ks
from strongroom.calls import FunctionSpec
from strongroom.clock import from_ms
from strongroom.decoders import text_hash, text_or_none
from strongroom.libraries import fcalls

# more_keys: the inventory keys, then the record keys; more_args: month, cls, bits per day of
# each inventory key, then the local creation date of each record.
STATS_REBUILD = FunctionSpec(
    "booking_stats_rebuild",
    "STATS_REBUILD",
    ("stats", "registry", "ledger", "edition"),
    ("n_inv", "n_rec"),
    replies=("ok counted", "retry", "invalid what"),
    key_tails=("inventories", "records"),
)


@dataclass(frozen=True)
class DayOccupancy:
    date: dt.date
    booked: int
    capacity: int


@dataclass(frozen=True)
class Occupancy:
    cls: str
    days: tuple[DayOccupancy, ...]
    booked: int
    capacity: int


def _days_sum(texts: Iterable[str | None], n_days: int) -> list[int]:
    """The sum of per-day stats fields (7 decimal digits a day, day 0 first) over rooms, per
    day: each field is read as one big integer, so 300 rooms are 300 additions (a day's sum
    stays below 10^7, so no carry crosses into the day before)."""
    width = n_days * DAY_WIDTH
    total = 0
    for field in texts:
        if field:
            total += int(field[:width].ljust(width, "0"))
    digits = str(total).zfill(width)
    return [int(digits[i : i + DAY_WIDTH]) for i in range(0, width, DAY_WIDTH)]


def _season_months() -> tuple[dt.date, ...]:
    """The calendar months the season's days fall in (the stats are kept per month)."""
    return request_months(season_days())


def _season_sum(columns: Sequence[Iterable[str | None]], months: Sequence[dt.date]) -> list[int]:
    """Per season day, the sum over rooms of a per-day field kept per month (`columns`: the
    rooms' values of each month's field, in the order of `months`)."""
    per_month = {
        month: _days_sum(column, month_length(month))
        for month, column in zip(months, columns, strict=True)
    }
    return [per_month[month_first(day)][day.day - 1] for day in season_days()]


@functools.lru_cache(maxsize=8)
def _stats_keys(prefix: str, rooms: int) -> tuple[tuple[str, str], ...]:
    """(stats, ledger) key of every room (cached: the overview builds 600 names a request)."""
    return tuple((RoomKeys(room).stats, RoomKeys(room).ledger) for room in range(1, rooms + 1))


def _stats_read(
    client: redis.Redis, fields: Sequence[str]
) -> tuple[list[list[str | None]], list[int], list[Closure]]:
    """`fields` of every room's stats hash (one pipeline of HMGET, with the ledger's size, and
    the closures whose slots are off sale), and the rooms whose hash is not exact yet (bookings
    written before the stats existed). Reads only."""
    keys = _stats_keys(settings.STRONGROOM_KEY_PREFIX, room_count())
    pipe = client.pipeline(transaction=False)
    for stats, ledger in keys:
        pipe.execute_command("HMGET", stats, "v", *fields)
        pipe.execute_command("SCARD", ledger)
    pipe.hgetall(ks.CLOSURES_ALL.key())
    *replies, closed = pipe.execute()
    rows: list[list[str | None]] = replies[0::2]
    stale = [
        n + 1
        for n, (row, size) in enumerate(zip(rows, replies[1::2], strict=True))
        if row[0] != STATS_VERSION and int(size)
    ]
    return rows, stale, closures_parse(text_hash(closed))


def _stats_rows(
    client: redis.Redis, fields: Sequence[str]
) -> tuple[list[list[str | None]], list[Closure]]:
    """`fields` of every room's stats hash, exact: step 1 reads them; step 2 (only for rooms
    whose hash is not exact yet) rebuilds those rooms with `stats_rebuild` and reads them again.
    With them, the closures (their slots are left out of the capacity)."""
    rows, stale, closures = _stats_read(client, fields)
    if stale:
        stats_rebuild(client=client, rooms=stale)
        pipe = client.pipeline(transaction=False)
        for room in stale:
            pipe.execute_command("HMGET", RoomKeys(room).stats, "v", *fields)
        for room, row in zip(stale, pipe.execute(), strict=True):
            rows[room - 1] = row
    return [row[1:] for row in rows], closures


def _occupancy(cls: str, slots: list[int], closures: Sequence[Closure] = ()) -> Occupancy:
    """Per season day, the booked slots against the capacity on sale (slots staff closed are
    not capacity)."""
    days = season_days()
    full = SLOTS_PER_DAY[cls] * room_count()
    rows = tuple(
        DayOccupancy(d, n, max(full - closed_slots(closures, cls, d), 0))
        for d, n in zip(days, slots, strict=True)
    )
    return Occupancy(cls, rows, sum(slots), sum(row.capacity for row in rows))


def occupancy_per_day(*, client: redis.Redis, cls: str) -> Occupancy:
    """Booked slots per season day over all rooms, and season totals, from the rooms' stats
    counters (one pipeline; the functions keep them equal to the bitmaps' bits, see
    `occupancy_from_bitmaps`)."""
    if cls not in CLASSES:
        raise ValueError(f"no class {cls!r}")
    months = _season_months()
    rows, closures = _stats_rows(client, [stats_field("slots", month_name(m), cls) for m in months])
    columns = [[row[i] for row in rows] for i in range(len(months))]
    return _occupancy(cls, _season_sum(columns, months), closures)


def occupancy_from_bitmaps(*, client: redis.Redis, cls: str) -> Occupancy:
    """`occupancy_per_day` counted from the inventory bitmaps themselves (one pipeline of a GET
    per room per month, the bits of each day counted here): the exact check of the counters,
    for tests and audits, not for pages."""
    if cls not in CLASSES:
        raise ValueError(f"no class {cls!r}")
    width = SLOTS_PER_DAY[cls]
    days = season_days()
    months = sorted({month_name(day) for day in days})
    rooms = range(1, room_count() + 1)
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        for month in months:
            key = RoomKeys(room).inventory(cls, month)
            pipe.execute_command("GET", key, **{redis.client.NEVER_DECODE: True})
    bitmaps = pipe.execute()
    per_day = [0] * len(days)
    mask = (1 << width) - 1
    size = -(-31 * width // 8) * 8  # a month's bitmap, zero bits past what was written
    for r in range(len(rooms)):
        for m, month in enumerate(months):
            data = bitmaps[r * len(months) + m] or b""
            bits = int.from_bytes(data.ljust(size // 8, b"\0")[: size // 8], "big")
            for i, day in enumerate(days):
                if month_name(day) == month:  # offsets count from the first byte's top bit
                    per_day[i] += ((bits >> (size - day.day * width)) & mask).bit_count()
    return _occupancy(cls, per_day)


@dataclass(frozen=True)
class ClassStats:
    """One class's season figures from the stats counters. `active_per_day`: confirmed +
    collected bookings per season day; `for_today`/`made_today`: active bookings with a day
    today / created today (local date); `statuses`: bookings per status."""

    cls: str
    occupancy: Occupancy
    active_per_day: tuple[int, ...]
    for_today: int
    made_today: int
    statuses: dict[str, int]

    @property
    def active(self) -> int:
        return self.statuses["confirmed"] + self.statuses["collected"]


@dataclass(frozen=True)
class SeasonStats:
    today: dt.date
    classes: tuple[ClassStats, ...]


def season_stats(*, client: redis.Redis, now: dt.datetime | None = None) -> SeasonStats:
    """Every class's counters of the season over all rooms: ONE round trip (an HMGET of each
    room's stats hash in one pipeline), whatever the number of bookings."""
    today = site_today(now)
    # Today's month too: a rolling window starts tomorrow, and today's pickups still count.
    months = tuple(sorted({*_season_months(), month_first(today)}))
    names = [month_name(m) for m in months]
    kinds = ["slots", "active", "made", *STATUSES]
    fields: list[str] = []
    for cls in CLASSES:
        fields += [stats_field("slots", name, cls) for name in names]
        fields += [stats_field("active", name, cls) for name in names]
        fields += [stats_field("made", name, cls, today.isoformat()) for name in names]
        for status in STATUSES:
            fields += [stats_field("status", name, cls, status) for name in names]
    width = len(kinds) * len(months)
    rows, closures = _stats_rows(client, fields)
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(fields)

    def kind_columns(c: int, k: int) -> list[Iterable[str | None]]:
        first = c * width + k * len(months)
        return list(columns[first : first + len(months)])

    def total(c: int, k: int) -> int:
        return sum(int(v) for column in kind_columns(c, k) for v in column if v)

    classes = []
    for c, cls in enumerate(CLASSES):
        slots = _season_sum(kind_columns(c, 0), months)
        active = _season_sum(kind_columns(c, 1), months)
        made = total(c, 2)
        statuses = {status: total(c, 3 + i) for i, status in enumerate(STATUSES)}
        today_column = kind_columns(c, 1)[months.index(month_first(today))]
        for_today = _days_sum(today_column, month_length(today))[today.day - 1]
        classes.append(
            ClassStats(
                cls, _occupancy(cls, slots, closures), tuple(active), for_today, made, statuses
            )
        )
    return SeasonStats(today, tuple(classes))


def _stats_call(
    room: int, registered: set[str], ledger: set[str], created: dict[str, str]
) -> tuple[str, list[str], list[object]]:
    """The booking_stats_rebuild call (function, KEYS, ARGV) for what was read of one room."""
    keys = RoomKeys(room)
    inventories = sorted(registered)
    ids = sorted(ledger)
    more_args: list[object] = []
    for key in inventories:
        parts = ks.BOOKING_INVENTORY.parse(key)
        more_args += [parts["month"], parts["cls"], SLOTS_PER_DAY[parts["cls"]]]
    for booking_id in ids:
        moment = from_ms(created.get(booking_id)) or dt.datetime.fromtimestamp(0, tz=dt.UTC)
        more_args.append(local_now(moment).date().isoformat())
    all_keys, args = STATS_REBUILD.call(
        keys={
            "stats": keys.stats,
            "registry": keys.registry,
            "ledger": keys.ledger,
            "edition": keys.edition,
        },
        args={"n_inv": len(inventories), "n_rec": len(ids)},
        tails={"inventories": inventories, "records": [keys.record(i) for i in ids]},
        more_args=more_args,
    )
    return STATS_REBUILD.name, all_keys, args


def stats_rebuild(*, client: redis.Redis, rooms: Sequence[int] | None = None) -> int:
    """Recompute the stats hash of `rooms` (default: every room) from the booking records and
    the inventory bitmaps, each room atomically (booking_stats_rebuild); a room that changed
    between the read and its call is read again. Returns the number of records counted.

    Needed once for data written before the stats existed (rebuildindexes runs it); from then
    on the claim, cancel, pickup and flush functions keep the counters exact themselves."""
    counted = 0
    pending = room_sets_read(client, list(range(1, room_count() + 1)) if rooms is None else rooms)
    for _attempt in range(5):
        if not pending:
            return counted
        order = sorted(pending)
        pipe = client.pipeline(transaction=False)
        for room in order:
            for booking_id in sorted(pending[room][1]):
                pipe.hget(RoomKeys(room).record(booking_id), "created")
        created_at = iter(pipe.execute())
        calls = []
        for room in order:
            registered, ledger = pending[room]
            created = {i: text_or_none(next(created_at)) or "" for i in sorted(ledger)}
            calls.append(_stats_call(room, registered, ledger, created))
        replies = fcalls(client, calls)
        changed = []
        for room, reply in zip(order, replies, strict=True):
            answer = STATS_REBUILD.answer_of(reply)
            if answer["status"] == "ok":
                counted += int(answer["counted"])
            else:
                changed.append(room)
        pending = room_sets_read(client, changed) if changed else {}
    raise RuntimeError("rooms kept changing during the stats rebuild")
