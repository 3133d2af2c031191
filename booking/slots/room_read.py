"""The one read of rooms that every availability page is built on (the booking panel, the
choice check, the building map): for each room, the booked bytes of the chosen days (a GETRANGE
per run of consecutive days) and the room's holds (an HGETALL), ONE round trip for any number of
rooms. Booked bytes and other buyers' holds are kept apart, so a slot blocked only by a hold
reads "held until 14:05", not "sold out"; a buyer's own holds count as free for them."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import redis
from django.conf import settings
from redis.client import NEVER_DECODE

from booking.domain.formats import CLOSURE_FIELDS, fields_split, hold_value_split
from booking.domain.keys import RoomKeys
from booking.domain.rules import calendar_day, hour_mask, month_first, month_name, room_count
from booking.slots.layout import day_of_run, day_runs, run_bytes, with_mask
from strongroom.ahead import Command, pipeline_replies
from strongroom.clock import to_ms
from strongroom.decoders import text_hash, text_or_none


@dataclass(frozen=True)
class HeldSlots:
    """Another buyer's unexpired hold as the map needs it: its hours and boxes on one day."""

    mask: int  # 24-bit hour mask (1 for class A)
    boxes: tuple[int, ...]  # class C; () for A and B
    expires_ms: int


@dataclass(frozen=True)
class RoomDays:
    """One room's read: its booked bytes per chosen day and the holds on those days (days by
    their calendar day number, `calendar_day`)."""

    room: int
    booked: dict[int, bytes]  # calendar day -> bytes (A: one byte, 0 or 1)
    holds: dict[int, tuple[HeldSlots, ...]]  # calendar day -> other buyers' holds
    # Everyone with an unexpired hold of the class on those days, the reader included.
    holders: frozenset[str] = frozenset()
    # Staff closures on those days: (24-bit hour mask, reason) per calendar day.
    closures: dict[int, tuple[tuple[int, str], ...]] = field(default_factory=dict)
    # The room's edition as read before the rest ('': none read, or the room never written),
    # and the earliest end of the unexpired holds of the class on those days (epoch ms; None:
    # no such hold): what was read stays the room's state until one of them changes.
    edition: str = ""
    until_ms: int | None = None

    def closed(self, day: int, cls: str) -> str:
        """The reason the whole day is closed for `cls` ('' when it is not): any closure
        closes class A's day, a whole-day closure every class's."""
        for mask, reason in self.closures.get(day, ()):
            if cls == "A" or mask == (1 << 24) - 1:
                return reason
        return ""


def _holds_by_day(
    raw: dict[str, str], cls: str, days: set[int], owner_id: str | None, now_ms: int
) -> tuple[dict[int, tuple[HeldSlots, ...]], frozenset[str], int | None]:
    """Other buyers' unexpired holds of `cls` on `days` (values as
    booking.domain.formats.HOLD_FIELDS names them), the owners of every such hold and the
    earliest end of those holds. The buyer's own holds count as free for them."""
    found: dict[int, list[HeldSlots]] = {}
    holders: set[str] = set()
    until: int | None = None
    for value in raw.values():
        hold = hold_value_split(value)
        expiry = int(float(hold["expiry"]))
        if hold["cls"] != cls or expiry <= now_ms:
            continue
        on_days = [day for day in (int(d) for d in hold["days"].split(",") if d) if day in days]
        if on_days:
            holders.add(hold["owner"])
            until = expiry if until is None else min(until, expiry)
        if owner_id is not None and hold["owner"] == owner_id:
            continue
        mask = 1 if cls == "A" else hour_mask(int(hold["hstart"] or 0), int(hold["hend"] or 0))
        boxes = tuple(int(b) for b in hold["boxes"].split(",") if b) if cls == "C" else ()
        for day in on_days:
            found.setdefault(day, []).append(HeldSlots(mask, boxes, expiry))
    return {day: tuple(held) for day, held in found.items()}, frozenset(holders), until


def _closures_by_day(raw: dict[str, str], days: set[int]) -> dict[int, tuple[tuple[int, str], ...]]:
    """The room's closures (CLOSURE_FIELDS) on `days`: (hour mask, reason) per day."""
    found: dict[int, list[tuple[int, str]]] = {}
    for value in raw.values():
        c = fields_split(value, CLOSURE_FIELDS)
        mask = hour_mask(int(c["hstart"]), int(c["hend"]))
        for day in range(max(int(c["first"]), min(days)), min(int(c["last"]), max(days)) + 1):
            if day in days:
                found.setdefault(day, []).append((mask, c["reason"]))
    return {day: tuple(closed) for day, closed in found.items()}


@functools.lru_cache(maxsize=16)
def _key_names(
    prefix: str, months: tuple[str, ...], cls: str
) -> tuple[tuple[tuple[str, ...], str, str, str], ...]:
    """(inventories of `cls` for `months`, holds, closures, edition) of every room, built once
    (900 names a map otherwise)."""
    return tuple(
        (
            tuple(RoomKeys(room).inventory(cls, m) for m in months),
            RoomKeys(room).holds,
            RoomKeys(room).closures,
            RoomKeys(room).edition,
        )
        for room in range(1, room_count() + 1)
    )


@dataclass(frozen=True)
class _Run:
    """Consecutive days of one calendar month: which month key, and their days in it."""

    month: int  # index into the months read
    first: int  # calendar day number of the run's first day
    start: int  # its day of the month, from 0
    end: int  # the run's last day of the month, from 0


def _month_runs(dates: Sequence[dt.date]) -> tuple[tuple[str, ...], tuple[_Run, ...]]:
    """The months `dates` fall in and their runs of consecutive days (a GETRANGE each)."""
    return _runs_of(tuple(dates))


@functools.lru_cache(maxsize=256)  # a page plans its read and then reads: the same days twice
def _runs_of(dates: tuple[dt.date, ...]) -> tuple[tuple[str, ...], tuple[_Run, ...]]:
    by_month: dict[dt.date, list[int]] = {}
    for date in dates:
        by_month.setdefault(month_first(date), []).append(date.day - 1)
    months = sorted(by_month)
    runs = tuple(
        _Run(i, calendar_day(month) + start, start, end)
        for i, month in enumerate(months)
        for start, end in day_runs(by_month[month])
    )
    return tuple(month_name(m) for m in months), runs


def rooms_commands(
    *, cls: str, rooms: Sequence[int], dates: Sequence[dt.date], editions: bool = False
) -> list[Command]:
    """What `rooms_read` sends: a GETRANGE per room and run of consecutive days of a month, and
    an HGETALL of the room's holds and one of its closures (a view plans them ahead with its
    identity, strongroom/ahead.py); with `editions`, first a GET of the room's edition."""
    months, runs = _month_runs(dates)
    raw = {NEVER_DECODE: True}  # bytes, whatever the client's decode_responses
    names = _key_names(settings.STRONGROOM_KEY_PREFIX, months, cls)
    commands: list[Command] = []
    for room in rooms:
        inventories, holds_key, closures_key, edition_key = names[room - 1]
        if editions:
            # Before the rest, in the same pipeline: a write between the two can only make
            # what is read newer than the edition, never older (booking/README.md).
            commands.append((("GET", edition_key), {}))
        for run in runs:
            span = run_bytes(cls, run.start, run.end)
            commands.append((("GETRANGE", inventories[run.month], *span), raw))
        commands.append((("HGETALL", holds_key), {}))
        commands.append((("HGETALL", closures_key), {}))
    return commands


def rooms_read(
    *,
    client: redis.Redis,
    cls: str,
    rooms: Sequence[int],
    dates: Sequence[dt.date],
    owner_id: str | None = None,
    now: dt.datetime | None = None,
    editions: bool = False,
) -> list[RoomDays]:
    """The booked bytes and other buyers' holds of `rooms` on `dates`, in ONE
    round trip: one pipeline of `rooms_commands` (on a cluster, redis-py sends one pipeline per
    primary), none when the view read them ahead with its identity. With `editions`, each
    room's edition too (kept pieces, booking.web.kept)."""
    days = sorted({calendar_day(d) for d in dates})
    _months, runs = _month_runs(dates)
    commands = rooms_commands(cls=cls, rooms=rooms, dates=dates, editions=editions)
    replies = pipeline_replies(client, commands)
    now_ms = to_ms(now or dt.datetime.now(tz=dt.UTC))
    wanted = set(days)
    first = 1 if editions else 0
    step = first + len(runs) + 2
    found = []
    for n, room in enumerate(rooms):
        at = n * step + first
        edition = (text_or_none(replies[n * step]) or "") if editions else ""
        chunks, holds = replies[at : at + len(runs)], replies[at + len(runs)]
        closures = replies[at + len(runs) + 1]
        booked: dict[int, bytes] = {}
        for run, chunk in zip(runs, chunks, strict=True):
            for at in range(run.start, run.end + 1):
                booked[run.first + at - run.start] = day_of_run(cls, chunk, run.start, at)
        held, holders, until = (
            _holds_by_day(text_hash(holds), cls, wanted, owner_id, now_ms)
            if holds
            else ({}, frozenset(), None)
        )
        closed = _closures_by_day(text_hash(closures), wanted) if closures and wanted else {}
        found.append(RoomDays(room, booked, held, holders, closed, edition, until))
    return found


def slots_taken(days: RoomDays, cls: str, day: int) -> bytes:
    """The day's bytes with other buyers' holds and staff closures added (what cannot be
    booked now)."""
    value = days.booked[day]
    holds = days.holds.get(day, ())
    closures = days.closures.get(day, ())
    if not holds and not closures:
        return value
    if cls == "A":
        return b"\x01"
    for hold in holds:
        for box in hold.boxes if cls == "C" else (None,):
            value = with_mask(value, box, hold.mask)
    for mask, _reason in closures:
        for box in range(1, 101) if cls == "C" else (None,):
            value = with_mask(value, box, mask)
    return value
