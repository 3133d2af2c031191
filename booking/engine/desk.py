"""The pickup desk: the bookings due on a day in a range of rooms, collected or not, and the
hand-over of a booking without its code (Redis Function booking_handover, durable)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from booking.domain.keys import RoomKeys
from booking.domain.records import Booking, booking_from_hash, flat_to_dict
from booking.domain.rules import (
    booking_id_room,
    format_room,
    local_now,
    reason_clean,
    request_id_new,
    request_id_valid,
)
from booking.engine.bookings import bookings_between
from booking.engine.pickup import pickup_window
from strongroom.calls import FunctionSpec
from strongroom.clock import to_ms
from strongroom.durable import durable_fcall

HANDOVER = FunctionSpec(
    "booking_handover",
    "HANDOVER",
    ("record", "audit", "stats", "edition"),
    ("actor", "today", "note", "now_ms", "audit_maxlen", "room", "request_id"),
    replies=("handed record", "already_collected record", "not_found", "not_today record",
             "invalid what"),
)  # fmt: skip

DESK_LIMIT = 2000  # bookings one desk page lists (a day of the whole building is far fewer)


@dataclass(frozen=True)
class DeskRow:
    booking: Booking
    collected: bool  # the day's pickup is done (at the safe or at the desk)
    # Today's pickup hours and their grace are over (the kiosk no longer opens): a hand-over
    # now is a late one, and the booking is not "still to come".
    hours_over: bool = False
    ends_at: str = ""  # when its code stops opening that day ("12:15"; "" for class A)


@dataclass(frozen=True)
class Desk:
    day: dt.date
    rooms: tuple[int, int]
    rows: list[DeskRow]

    @property
    def due(self) -> int:
        return len(self.rows)

    @property
    def collected(self) -> int:
        return sum(1 for row in self.rows if row.collected)

    @property
    def late(self) -> int:
        """Not collected, and past their pickup hours today."""
        return sum(1 for row in self.rows if not row.collected and row.hours_over)

    @property
    def left(self) -> int:
        """Not collected and still within (or before) their pickup hours."""
        return self.due - self.collected - self.late


def _row(booking: Booking, day: dt.date, now: dt.datetime) -> DeskRow:
    window = pickup_window(booking)
    ends_at = ""
    if window is not None and window[1] < 24 * 60:
        ends_at = f"{window[1] // 60:02d}:{window[1] % 60:02d}"
    minute = now.hour * 60 + now.minute
    over = window is not None and day == now.date() and minute >= window[1]
    return DeskRow(booking, day in booking.collected_dates, over, ends_at)


def desk_read(
    *,
    client: redis.Redis,
    day: dt.date,
    first_room: int,
    last_room: int,
    now: dt.datetime | None = None,
) -> Desk:
    """The bookings due on `day` in rooms `first_room`..`last_room` (confirmed or collected),
    by room then hours, each with whether that day's pickup is done and, today, whether its
    pickup hours are over (booking.engine.pickup.pickup_window, as the kiosk judges them)."""
    found = bookings_between(client=client, start=day, end=day, limit=DESK_LIMIT)
    moment = local_now(now)
    rows = [
        _row(b, day, moment)
        for b in found
        if first_room <= b.room <= last_room
        and b.status in ("confirmed", "collected")
        and day in b.dates
    ]
    rows.sort(key=lambda row: (row.booking.room, row.booking.hours or (0, 0), row.booking.id))
    return Desk(day, (first_room, last_room), rows)


@dataclass(frozen=True)
class HandoverResult:
    ok: bool
    outcome: str
    message: Any
    booking: Booking | None = None


HANDOVER_MESSAGES = {
    "handed": _("Handed over: the booking is collected for today and its code no longer opens."),
    "handed_late": _(
        "Handed over late, after its pickup hours: the booking is collected for today and its "
        "code no longer opens."
    ),
    "already_collected": _("Today's pickup of this booking is done already."),
    "not_found": _("There is no confirmed booking with this id."),
    "not_today": _("This booking is not due today: only today's pickups are handed over."),
}


def booking_handover(
    *,
    client: redis.Redis,
    booking_id: str,
    actor_id: str,
    note: str = "",
    now: dt.datetime | None = None,
    request_id: str | None = None,
) -> HandoverResult:
    """Staff hand today's treasure over without the code; the staff member, the time and the
    note go into the room's audit, and the code stops opening."""
    room = booking_id_room(booking_id)
    if room is None or not actor_id:
        return HandoverResult(False, "not_found", HANDOVER_MESSAGES["not_found"])
    keys = RoomKeys(room)
    call = HANDOVER.call(
        keys={
            "record": keys.record(booking_id),
            "audit": keys.audit,
            "stats": keys.stats,
            "edition": keys.edition,
        },
        args={
            "actor": actor_id,
            "today": local_now(now).date().isoformat(),
            "note": reason_clean(note),
            "now_ms": to_ms(now or dt.datetime.now(tz=dt.UTC)),
            "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
            "room": format_room(room),
            "request_id": request_id if request_id_valid(request_id) else request_id_new(),
        },
    )
    answer = HANDOVER.answer_of(durable_fcall(client, HANDOVER.name, *call, first=True))
    outcome = answer["status"]
    if outcome == "invalid":
        raise ValueError(f"booking_handover refused the call ({answer['what']})")
    record = answer.get("record")
    booking = booking_from_hash(flat_to_dict(record)) if record else None
    message = HANDOVER_MESSAGES[outcome]
    if outcome == "handed" and booking is not None:
        moment = local_now(now)
        if _row(booking, moment.date(), moment).hours_over:
            message = HANDOVER_MESSAGES["handed_late"]
    return HandoverResult(outcome == "handed", outcome, message, booking)
