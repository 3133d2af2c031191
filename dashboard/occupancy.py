"""The staff occupancy map: one class on one day as a heat map, a summary row per floor and,
for a chosen floor, its rooms by hours (class B) or by boxes over an hour range (class C)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import redis
from django.conf import settings

from booking.domain.rules import format_room
from booking.selectors import DayInventory, day_inventory

ROOMS_PER_FLOOR = 25


@dataclass(frozen=True)
class Floor:
    number: int
    rooms: tuple[int, ...]

    @property
    def label(self) -> str:
        return f"{format_room(self.rooms[0])}–{format_room(self.rooms[-1])}"


def floors() -> list[Floor]:
    """The building's rooms in floors of 25 (001-025 on floor 1, ...)."""
    rooms = list(range(1, settings.STRONGROOM_ROOM_COUNT + 1))
    return [
        Floor(i // ROOMS_PER_FLOOR + 1, tuple(rooms[i : i + ROOMS_PER_FLOOR]))
        for i in range(0, len(rooms), ROOMS_PER_FLOOR)
    ]


def hours_booked(mask: int, hours: Sequence[int]) -> int:
    """How many of `hours` are set in a 24-bit hour mask (bit 23 - h is hour h): booked, held
    or closed."""
    return sum(1 for h in hours if mask & (1 << (23 - h)))


@dataclass(frozen=True)
class HeatCell:
    booked: int
    capacity: int
    room: int | None = None
    hour: int | None = None
    box: int | None = None
    closed: int = 0  # of its capacity, the slots staff closed (off sale)
    held: int = 0  # of its capacity, the slots a buyer's hold keeps (not booked)
    held_until: dt.datetime | None = None  # when the last of those holds ends (a room's cell)

    @property
    def shut(self) -> bool:
        """Closed whole (shown hatched); one closed in part says so in its title only."""
        return 0 < self.capacity <= self.closed

    @property
    def level(self) -> int:
        """0 (free) to 4 (full), for the heat colour."""
        if self.booked <= 0 or self.capacity <= 0:
            return 0
        return max(1, min(4, -(-4 * self.booked // self.capacity)))


@dataclass(frozen=True)
class HeatRow:
    label: str
    room: int | None
    floor: int | None
    cells: tuple[HeatCell, ...]
    booked: int
    capacity: int
    held: int = 0


@dataclass(frozen=True)
class HeatMap:
    cls: str
    date: dt.date
    summary_columns: tuple[str, ...]
    detail_columns: tuple[str, ...]
    summary: tuple[HeatRow, ...]
    detail: tuple[HeatRow, ...]
    floor: Floor | None
    hours: tuple[int, int] | None


BOX_GROUP = 10
HOUR_COLUMNS = tuple(f"{h:02d}" for h in range(24))


def occupancy_map(
    *,
    client: redis.Redis,
    cls: str,
    date: dt.date,
    floor: int | None = None,
    hours: tuple[int, int] | None = None,
) -> HeatMap:
    """A heat map of one class on one day (one pipeline): a summary row per floor, and for a
    chosen floor its rooms x hours (B) or rooms x boxes over an hour range (C); class A shows
    every room in the summary. Slots buyers hold are counted apart from the booked ones, as
    the buyers' map shows them (booking's one read of what is free)."""
    inventory = day_inventory(client=client, cls=cls, date=date)
    rooms, held = inventory.rooms, inventory.held
    all_floors = floors()
    chosen = next((f for f in all_floors if f.number == floor), None)

    def shut_in(room: int, hours: Sequence[int]) -> int:
        return hours_booked(inventory.closed.get(room, 0), hours)

    def held_in(room: int, box: int, hours: Sequence[int]) -> int:
        masks = held.get(room)
        return hours_booked(masks[box - 1], hours) if masks else 0

    if cls == "A":  # a room closed for any hours of the day cannot be booked for it
        columns = tuple(f"+{i}" for i in range(ROOMS_PER_FLOOR))
        summary = [
            _row(fl.label, None, fl.number,
                 tuple(_room_a(inventory, r) for r in fl.rooms))
            for fl in all_floors
        ]  # fmt: skip
        return HeatMap(cls, date, columns, (), tuple(summary), (), None, None)
    if cls == "B":
        summary = [
            _row(fl.label, None, fl.number, tuple(
                HeatCell(sum(hours_booked(rooms[r][0], [h]) for r in fl.rooms), len(fl.rooms),
                         hour=h, closed=sum(shut_in(r, [h]) for r in fl.rooms),
                         held=sum(held_in(r, 1, [h]) for r in fl.rooms))
                for h in range(24)))
            for fl in all_floors
        ]  # fmt: skip
        detail = [
            _row(format_room(room), room, None, tuple(
                HeatCell(hours_booked(rooms[room][0], [h]), 1, room=room, hour=h,
                         closed=shut_in(room, [h]), held=held_in(room, 1, [h]),
                         held_until=inventory.until(room, 1, [h]))
                for h in range(24)))
            for room in (chosen.rooms if chosen else ())
        ]  # fmt: skip
        return HeatMap(cls, date, HOUR_COLUMNS, HOUR_COLUMNS, tuple(summary), tuple(detail),
                       chosen, None)  # fmt: skip
    span = list(range(*(hours or (0, 24))))
    groups = [range(g, g + BOX_GROUP) for g in range(1, 101, BOX_GROUP)]
    summary = [
        _row(fl.label, None, fl.number, tuple(
            HeatCell(sum(hours_booked(rooms[r][b - 1], span) for r in fl.rooms for b in g),
                     len(fl.rooms) * len(g) * len(span),
                     closed=sum(shut_in(r, span) for r in fl.rooms) * len(g),
                     held=sum(held_in(r, b, span) for r in fl.rooms for b in g))
            for g in groups))
        for fl in all_floors
    ]  # fmt: skip
    detail = [
        _row(format_room(room), room, None, tuple(
            HeatCell(hours_booked(rooms[room][b - 1], span), len(span), room=room, box=b,
                     closed=shut_in(room, span), held=held_in(room, b, span),
                     held_until=inventory.until(room, b, span))
            for b in range(1, 101)))
        for room in (chosen.rooms if chosen else ())
    ]  # fmt: skip
    return HeatMap(
        cls, date, tuple(f"{g.start}–{g.stop - 1}" for g in groups),
        tuple(str(b) for b in range(1, 101)), tuple(summary), tuple(detail), chosen,
        hours or (0, 24),
    )  # fmt: skip


def _room_a(inventory: DayInventory, room: int) -> HeatCell:
    """A class A room's cell: booked, held (until when) or closed (any closure closes the day)."""
    held = inventory.held.get(room, (0,))[0]
    until = inventory.until(room, 1, [0]) if held else None
    shut = min(1, inventory.closed.get(room, 0))
    return HeatCell(inventory.rooms[room][0], 1, room=room, closed=shut, held=held,
                    held_until=until)  # fmt: skip


def _row(label: str, room: int | None, floor: int | None, cells: tuple[HeatCell, ...]) -> HeatRow:
    return HeatRow(
        label, room, floor, cells, sum(c.booked for c in cells), sum(c.capacity for c in cells),
        sum(c.held for c in cells),
    )  # fmt: skip
