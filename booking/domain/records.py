"""Booking and hold records: their types and how the store's hashes, hold values and replies
decode into them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from booking.domain.codes import code_for, code_unseal
from booking.domain.formats import TAKEN_FIELDS, fields_split, hold_value_split
from booking.domain.parser import SlotRequest
from booking.domain.references import reference_derived
from booking.domain.rules import (
    HOURS_PER_DAY,
    calendar_date,
    format_room,
)
from strongroom.clock import from_ms


@dataclass(frozen=True)
class Slot:
    """One slot reported as taken: by a booking, or (held=True) by another buyer's hold."""

    date: dt.date
    hour: int | None = None
    box: int | None = None
    held: bool = False


@dataclass(frozen=True)
class Booking:
    """One booking record as stored."""

    id: str
    owner_id: str
    cls: str
    room: int
    dates: tuple[dt.date, ...]
    hours: tuple[int, int] | None
    boxes: tuple[int, ...]
    created_at: dt.datetime
    status: str
    collected_dates: tuple[dt.date, ...] = ()
    collected_at: dt.datetime | None = None  # when its safe last opened for it
    cancelled_at: dt.datetime | None = None
    cancelled_by: str = ""
    cancel_reason: str = ""
    code_sealed: str = field(default="", repr=False)  # records made before codes were derived
    code_n: int = field(default=-1, repr=False)
    ref: str = ""
    seq: int = 0  # times moved: the calendar events' SEQUENCE
    uid_dates: tuple[dt.date, ...] = ()  # the dates first booked (a moved booking's event UIDs)
    uid_id: str = ""  # the id first booked under, if it moved to another room (its event UIDs)
    moved_to: str = ""  # a moved booking's old record: the id it lives on under
    moved_from: str = ""  # moved in from another room: the id of its record there
    unsure: bool = False  # the store could not confirm the claim durable (booking.engine.unsure)
    handed: bool = False  # handed over at the desk once: its code was withdrawn

    @property
    def room_label(self) -> str:
        return format_room(self.room)

    @property
    def boxes_label(self) -> str:
        """The boxes as people read them: "3, 4, 5" (mail and calendar files are plain text)."""
        return ", ".join(str(box) for box in self.boxes)

    @property
    def reference(self) -> str:
        """The short reference people read out (B-7K3Q-9MXD), shown instead of the id."""
        return self.ref or reference_derived(self.id, self.room)

    def soonest_key(self, today: dt.date) -> tuple[dt.date, tuple[int, int], int]:
        """Orders a buyer's upcoming bookings by the next pickup: the first of its days from
        `today` on not collected yet (else its last day), its hours, its room."""
        ahead = [d for d in self.dates if d >= today and d not in self.collected_dates]
        return (ahead[0] if ahead else self.dates[-1], self.hours or (0, 0), self.room)

    def pickup_code(self) -> str:
        """The pickup code (show it to the owner only); '' if it cannot be read."""
        if self.code_n >= 0:
            return code_for(self.id, self.code_n)
        return code_unseal(self.code_sealed)


@dataclass(frozen=True)
class Hold:
    """Slots kept for one buyer until `expires_at`."""

    id: str
    owner_id: str
    request: SlotRequest
    expires_at: dt.datetime


def _dates(text: str) -> tuple[dt.date, ...]:
    return tuple(dt.date.fromisoformat(part) for part in text.split(",") if part)


def booking_from_hash(data: dict[str, str]) -> Booking | None:
    """A Booking from a record's HGETALL (None for an empty or foreign hash)."""
    if not data.get("id"):
        return None
    cls = data["cls"]
    hours = None if cls == "A" else (int(data["hstart"]), int(data["hend"]))
    return Booking(
        id=data["id"],
        owner_id=data["owner"],
        cls=cls,
        room=int(data["room"]),
        dates=_dates(data["dates"]),
        hours=hours,
        boxes=tuple(int(b) for b in data.get("boxes", "").split(",") if b),
        created_at=from_ms(data["created"]) or dt.datetime.fromtimestamp(0, tz=dt.UTC),
        status=data["status"],
        collected_dates=_dates(data.get("collected", "")),
        collected_at=from_ms(data.get("collected_at")),
        cancelled_at=from_ms(data.get("cancelled_at")),
        cancelled_by=data.get("cancelled_by", ""),
        cancel_reason=data.get("cancel_reason", ""),
        code_sealed=data.get("code_sealed", ""),
        code_n=int(data.get("code_n") or -1),
        ref=data.get("ref", ""),
        seq=int(data.get("seq") or 0),
        uid_dates=_dates(data.get("uid_dates", "")),
        uid_id=data.get("uid_id", ""),
        moved_to=data.get("moved_to", ""),
        moved_from=data.get("moved_from", ""),
        unsure=bool(data.get("unsure")),
        handed=bool(data.get("handed_at")),
    )


def flat_to_dict(flat: Sequence[str]) -> dict[str, str]:
    """A Lua HGETALL reply (flat list) as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def slots_from_reply(entries: Sequence[str], request_cls: str) -> list[Slot]:
    """Expand the function's taken entries (TAKEN_FIELDS) into one Slot per taken slot."""
    slots: set[Slot] = set()
    for entry in entries:
        taken = fields_split(entry, TAKEN_FIELDS, ":")
        day, box, mask, held = (int(float(taken[name])) for name in TAKEN_FIELDS)
        date = calendar_date(day)
        if request_cls == "A":
            slots.add(Slot(date, None, None, bool(held)))
            continue
        for hour in range(HOURS_PER_DAY):
            if mask & (1 << (23 - hour)):
                slots.add(Slot(date, hour, box or None, bool(held)))
    return sorted(slots, key=lambda s: (s.date, s.box or 0, s.hour or 0, s.held))


def hold_value_parse(value: str) -> tuple[int, str, str, list[int], int, int, list[int]]:
    """A hold's stored value (booking.domain.formats.HOLD_FIELDS) as expiry ms, owner, class, days,
    hour start, hour end, boxes."""
    f = hold_value_split(value)
    return (
        int(float(f["expiry"])),
        f["owner"],
        f["cls"],
        [int(d) for d in f["days"].split(",") if d],
        int(f["hstart"] or 0),
        int(f["hend"] or 0),
        [int(b) for b in f["boxes"].split(",") if b],
    )


def booking_taking(
    own: Sequence[Booking],
    *,
    cls: str,
    room: int,
    dates: Sequence[dt.date],
    hours: tuple[int, int] | None = None,
    boxes: Sequence[int] = (),
) -> Booking | None:
    """The live booking of `own` (one buyer's) that takes any of these slots (the room and
    class, any of `dates`, for B and C any of `hours`, for C any of `boxes`), or None."""
    for booking in own:
        live = booking.status != "cancelled"
        same = booking.room == room and booking.cls == cls
        if not (live and same and set(dates) & set(booking.dates)):
            continue
        if boxes and not set(boxes) & set(booking.boxes):
            continue
        theirs = booking.hours
        if hours and theirs and not (hours[0] < theirs[1] and theirs[0] < hours[1]):
            continue  # other hours of the day
        return booking
    return None


def slots_all_own(own: Sequence[Booking], *, cls: str, room: int, slots: Sequence[Slot]) -> bool:
    """Whether every one of `slots` (taken ones, as a refusal or the booking page finds them)
    is taken by a live booking of `own`, the buyer's own, and none is held by another buyer:
    then what stands in the way is his booking, named as his, and nothing he can wait for."""
    return bool(slots) and all(
        not slot.held
        and booking_taking(
            own,
            cls=cls,
            room=room,
            dates=[slot.date],
            hours=None if slot.hour is None else (slot.hour, slot.hour + 1),
            boxes=() if slot.box is None else [slot.box],
        )
        is not None
        for slot in slots
    )
