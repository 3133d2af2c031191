"""Moving a store written with the season layout (bitmaps named by the season's first day, days
counted from it in records, holds, waits and statistics) to the calendar layout (bitmaps per
calendar month, days as calendar day numbers), and the check that refuses to serve a store that
still needs it.

`store_upgrade` moves one room at a time in one MULTI on the room's own slot (bitmaps,
registry, records, holds, hold days, waits, notices, outbox), then the waiters' own indexes and
the room's statistics (recomputed from records and bitmaps). Ids, pickup codes, references and
the person and date indexes do not name a season and stay as they are. A room already moved is
recognised and left alone, so the command can be run again after an interruption."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import redis
from redis.typing import EncodableT, FieldT

from booking.domain.formats import HOLD_FIELDS, months_arg, request_months
from booking.domain.keys import RoomKeys
from booking.domain.rules import (
    CLASS_DIGIT,
    CLASSES,
    SLOTS_PER_DAY,
    calendar_day,
    month_bytes,
    month_first,
    room_count,
)
from booking.engine.stats import stats_rebuild
from strongroom import keyspace as ks
from strongroom.decoders import text, text_hash, text_list
from strongroom.startup import StoreNotReady

LAYOUT = "calendar-1"  # what `{site}:layout` holds once the store is in the calendar layout
UPGRADE_COMMAND = "python manage.py upgradestore"
# Calendar day numbers are above 20,000 for any date this site sells; the season layout counted
# days from the season's first day, so its day numbers are below 366.
_SEASON_DAY_LIMIT = 10_000


class UpgradeNeeded(StoreNotReady):
    """The store holds data in the season layout: `manage.py upgradestore` moves it."""


@dataclass(frozen=True)
class UpgradeResult:
    rooms: int  # rooms that held something in the season layout
    bookings: int
    holds: int
    waits: int


def _legacy_inventory(key: str) -> tuple[str, dt.date] | None:
    """(class, season's first day) of a season-layout bitmap key, else None."""
    parts = ks.BOOKING_INVENTORY.parse(key)
    try:
        return parts["cls"], dt.date.fromisoformat(parts["month"])
    except ValueError:
        return None  # 'YYYY-MM': a calendar month


def _season_day(text_day: str) -> bool:
    return text_day.lstrip("-").isdigit() and int(text_day) < _SEASON_DAY_LIMIT


def _wait_legacy(member: str) -> bool:
    parts = member.split("|")
    return len(parts) == 6 and _season_day(parts[2])


def _wait_moved(member: str, start: dt.date) -> str:
    parts = member.split("|")
    parts[2] = str(calendar_day(start + dt.timedelta(days=int(parts[2]))))
    return "|".join(parts)


def _days_moved(days_text: str, start: dt.date) -> str:
    return ",".join(
        str(calendar_day(start + dt.timedelta(days=int(d)))) for d in days_text.split(",") if d
    )


def _room_reads(client: redis.Redis, rooms: Sequence[int]) -> list[list[object]]:
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        keys = RoomKeys(room)
        pipe.smembers(keys.registry)
        pipe.smembers(keys.ledger)
        pipe.hgetall(keys.holds)
        pipe.zrange(keys.waits, 0, -1)
        pipe.hkeys(keys.wait_notices)
    replies = pipe.execute()
    return [replies[i * 5 : i * 5 + 5] for i in range(len(rooms))]


def legacy_rooms(*, client: redis.Redis, rooms: Sequence[int] | None = None) -> list[int]:
    """The rooms holding anything in the season layout (two pipelines)."""
    rooms = list(range(1, room_count() + 1)) if rooms is None else list(rooms)
    found: set[int] = set()
    record_checks: list[tuple[int, str]] = []
    for room, (registry, ledger, holds, waits, notices) in zip(
        rooms, _room_reads(client, rooms), strict=True
    ):
        if any(_legacy_inventory(k) for k in text_list(list(registry))):  # type: ignore[call-overload]
            found.add(room)
        held = text_hash(holds)  # type: ignore[arg-type]
        if any(
            _season_day(d)
            for value in held.values()
            for d in value.split("|")[HOLD_FIELDS.index("days")].split(",")
            if d
        ):
            found.add(room)
        members = text_list(list(waits)) + text_list(list(notices))  # type: ignore[call-overload]
        if any(_wait_legacy(m) for m in members):
            found.add(room)
        record_checks += [(room, i) for i in text_list(list(ledger))]  # type: ignore[call-overload]
    pipe = client.pipeline(transaction=False)
    for room, booking_id in record_checks:
        pipe.hexists(RoomKeys(room).record(booking_id), "season")
    for (room, _id), legacy in zip(record_checks, pipe.execute(), strict=True):
        if legacy:
            found.add(room)
    return sorted(found)


def layout_check(*, client: redis.Redis) -> None:
    """Raise UpgradeNeeded when the store still holds the season layout; a store found in the
    calendar layout (or empty) is marked so (later starts read one key)."""
    if text(client.get(ks.STORE_LAYOUT.key()) or "") == LAYOUT:
        return
    if legacy_rooms(client=client):
        raise UpgradeNeeded(
            "This store holds bookings in the season layout (inventory named by the season's "
            f"first day). Stop the site and run `{UPGRADE_COMMAND}` once, then start it again."
        )
    client.set(ks.STORE_LAYOUT.key(), LAYOUT)


def layout_check_of(client: redis.Redis) -> None:
    """`layout_check` as a startup check (strongroom.startup)."""
    layout_check(client=client)


def _bitmaps_moved(
    old: dict[str, bytes], parsed: dict[str, tuple[str, dt.date]]
) -> dict[tuple[str, dt.date], bytearray]:
    """The calendar-month bitmaps holding what the season bitmaps `old` held."""
    new: dict[tuple[str, dt.date], bytearray] = {}
    for key, data in old.items():
        cls, start = parsed[key]
        bits = SLOTS_PER_DAY[cls]
        # A bitmap shorter than its season (or than its last day) reads as free where it ends.
        for offset in range(-(-len(data) * 8 // bits)):
            date = start + dt.timedelta(days=offset)
            month = month_first(date)
            if cls == "A":
                if not data[offset // 8] >> (7 - offset % 8) & 1:
                    continue
                target = new.setdefault((cls, month), bytearray(month_bytes(cls, month)))
                at = date.day - 1
                target[at // 8] |= 1 << (7 - at % 8)
                continue
            width = bits // 8
            chunk = data[offset * width : (offset + 1) * width].ljust(width, b"\0")
            if not any(chunk):
                continue
            target = new.setdefault((cls, month), bytearray(month_bytes(cls, month)))
            at = (date.day - 1) * width
            target[at : at + width] = bytes(
                a | b for a, b in zip(target[at : at + width], chunk, strict=True)
            )
    return new


def _room_upgrade(client: redis.Redis, room: int, start: dt.date) -> tuple[int, int, int, dict]:
    """Move one room (one MULTI on its slot). Returns bookings, holds and waits moved, and the
    waiters' index entries to rename (owner -> [(old entry, new entry)])."""
    keys = RoomKeys(room)
    (registry, ledger, holds, _waits, _notices) = _room_reads(client, [room])[0]
    parsed = {
        key: found
        for key in text_list(list(registry))  # type: ignore[call-overload]
        if (found := _legacy_inventory(key))
    }
    raw = client.pipeline(transaction=False)
    for key in parsed:
        raw.execute_command("GET", key, **{redis.client.NEVER_DECODE: True})
    old_bitmaps = dict(zip(parsed, raw.execute(), strict=True))
    ids = text_list(list(ledger))  # type: ignore[call-overload]
    pipe = client.pipeline(transaction=False)
    for booking_id in ids:
        pipe.hgetall(keys.record(booking_id))
    pipe.pttl(keys.holds)
    pipe.zrange(keys.waits, 0, -1, withscores=True)
    pipe.hgetall(keys.wait_notices)
    pipe.type(keys.outbox)
    *records_raw, holds_ttl, waits_scored, notices, outbox_type = pipe.execute()
    # A season-layout store's room outbox is a sorted set ('freed' entries name a season day);
    # a stream outbox is already written by the calendar layout's functions.
    outbox: list[tuple[str, float]] = []
    if text(outbox_type) == "zset":
        scored_mail = cast(
            "list[tuple[str, float]]", client.zrange(keys.outbox, 0, -1, withscores=True)
        )
        outbox = [(text(m), float(s)) for m, s in scored_mail]
    write = client.pipeline(transaction=True)
    # The room changes: its edition with it, in the same MULTI (kept pieces, booking/README.md).
    write.incr(keys.edition)
    for key in parsed:
        write.delete(key)
        write.srem(keys.registry, key)
    for (cls, month), data in _bitmaps_moved(old_bitmaps, parsed).items():
        write.set(keys.inventory(cls, month), bytes(data))
        write.sadd(keys.registry, keys.inventory(cls, month))
    bookings = 0
    for booking_id, record_raw in zip(ids, records_raw, strict=True):
        record = text_hash(record_raw)
        if "season" not in record:
            continue
        season = dt.date.fromisoformat(record["season"])
        dates = [dt.date.fromisoformat(d) for d in record["dates"].split(",") if d]
        months = request_months(dates)
        write.hset(
            keys.record(booking_id),
            mapping={
                "days": _days_moved(record["days"], season),
                "months": months_arg(months),
                "inv": ",".join(keys.inventory(record["cls"], m) for m in months),
            },
        )
        write.hdel(keys.record(booking_id), "season")
        bookings += 1
    moved_holds = 0
    held = text_hash(holds)  # type: ignore[arg-type]
    if held:
        days_at = HOLD_FIELDS.index("days")
        new_holds: dict[FieldT, EncodableT] = {}
        members: dict[str, int] = {}
        for hold_id, value in held.items():
            fields = value.split("|")
            if any(_season_day(d) for d in fields[days_at].split(",") if d):
                fields[days_at] = _days_moved(fields[days_at], start)
                moved_holds += 1
            new_holds[hold_id] = "|".join(fields)
            cls = fields[HOLD_FIELDS.index("cls")]
            for day in fields[days_at].split(","):
                if day and cls in CLASSES:
                    members[f"{hold_id}/{day}"] = CLASS_DIGIT[cls] * 100_000 + int(day)
        write.delete(keys.holds, keys.hold_days)
        write.hset(keys.holds, mapping=new_holds)
        if members:
            write.zadd(keys.hold_days, members)
        if int(holds_ttl) > 0:
            write.pexpire(keys.holds, int(holds_ttl))
            write.pexpire(keys.hold_days, int(holds_ttl))
    renamed: dict[str, list[tuple[str, str]]] = {}
    moved_waits = 0
    scored = [(text(m), s) for m, s in waits_scored]
    if any(_wait_legacy(m) for m, _s in scored):
        write.delete(keys.waits)
        write.zadd(keys.waits, {_wait_moved(m, start) if _wait_legacy(m) else m: s
                                for m, s in scored})  # fmt: skip
    for member, _s in scored:
        if _wait_legacy(member):
            moved_waits += 1
            new = _wait_moved(member, start)
            entry = f"{keys.tag}|"
            renamed.setdefault(member.split("|")[0], []).append((entry + member, entry + new))
    told = text_hash(notices)
    if any(_wait_legacy(m) for m in told):
        write.delete(keys.wait_notices)
        write.hset(keys.wait_notices, mapping={
            _wait_moved(m, start) if _wait_legacy(m) else m: v for m, v in told.items()
        })  # fmt: skip
        for member in told:
            if _wait_legacy(member):
                new = _wait_moved(member, start)
                entry = f"{keys.tag}|"
                renamed.setdefault(member.split("|")[0], []).append((entry + member, entry + new))
    for item, score in outbox:
        member = text(item)
        parts = member.split("|")
        if parts[0] == "freed" and len(parts) >= 8 and _season_day(parts[4]):
            wait = "|".join(parts[2:8])
            new = "|".join([*parts[:2], _wait_moved(wait, start), *parts[8:]])
            write.zrem(keys.outbox, member)
            write.zadd(keys.outbox, {new: score})
    write.execute()
    return bookings, moved_holds, moved_waits, renamed


def store_upgrade(*, client: redis.Redis, season_start: dt.date | None = None) -> UpgradeResult:
    """Move every room still in the season layout, then mark the store. `season_start`: the
    first day of the season the old site sold (holds and waits name only their day's number in
    it); by default the one the old bitmaps are named by."""
    rooms = legacy_rooms(client=client)
    if not rooms:
        client.set(ks.STORE_LAYOUT.key(), LAYOUT)
        return UpgradeResult(0, 0, 0, 0)
    starts: set[dt.date] = set()
    for registry, *_rest in _room_reads(client, rooms):
        for key in text_list(list(registry)):  # type: ignore[call-overload]
            if found := _legacy_inventory(key):
                starts.add(found[1])
    if season_start is None:
        if len(starts) != 1:
            raise ValueError(
                "give the old season's first day (--season-start YYYY-MM-DD): the store's "
                f"bitmaps name {len(starts)} seasons"
            )
        season_start = starts.pop()
    totals = [0, 0, 0]
    for room in rooms:
        bookings, holds, waits, renamed = _room_upgrade(client, room, season_start)
        totals = [totals[0] + bookings, totals[1] + holds, totals[2] + waits]
        pipe = client.pipeline(transaction=False)
        for owner, pairs in renamed.items():
            index = ks.BOOKING_WAITS_BY_PERSON.key(owner_id=owner)
            for old, new in pairs:
                score = client.zscore(index, old)
                if score is not None:
                    pipe.zrem(index, old)
                    pipe.zadd(index, {new: score})
        pipe.execute()
    stats_rebuild(client=client, rooms=rooms)
    client.set(ks.STORE_LAYOUT.key(), LAYOUT)
    return UpgradeResult(len(rooms), *totals)
