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
from booking.engine.pickup import pickup_still_open, pickup_window
from strongroom.calls import FunctionSpec
from strongroom.clock import to_ms
from strongroom.durable import durable_fcall

HANDOVER = FunctionSpec(
    "booking_handover",
    "HANDOVER",
    ("record", "audit", "stats", "edition"),
    ("actor", "today", "note", "now_ms", "audit_maxlen", "room", "request_id", "day",
     "yesterday", "minute", "grace_minutes"),
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
    # The day's pickup window has not ended (the grace after midnight included): still to
    # come, not "never collected", even on the desk of a day gone by.
    open: bool = True
    # Staff may hand it over now: not collected, and today's, or its window still open.
    handable: bool = False


@dataclass(frozen=True)
class Desk:
    day: dt.date
    rooms: tuple[int, int]
    rows: list[DeskRow]
    # Its counts can still change by a pickup or a hand-over: today's, or a grace runs on.
    live: bool = False

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
        """Not collected and still within (or before) their pickup window."""
        return sum(1 for row in self.rows if not row.collected and row.open)

    @property
    def missed(self) -> int:
        """Not collected, and the window of a day gone by has ended: never collected."""
        return self.due - self.collected - self.late - self.left


def _row(booking: Booking, day: dt.date, now: dt.datetime) -> DeskRow:
    window = pickup_window(booking)
    ends_at = ""
    if window is not None and window[1] < 24 * 60:
        ends_at = f"{window[1] // 60:02d}:{window[1] % 60:02d}"
    today = now.date()
    still_open = pickup_still_open(booking, now=now, day=day)
    collected = day in booking.collected_dates
    # Today's may be handed over late; a day gone by only while its grace runs on (the
    # function booking_handover judges the same).
    handable = not collected and (day == today or (day < today and still_open))
    over = day == today and not still_open
    return DeskRow(booking, collected, over, ends_at, still_open, handable)


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
    live = day == moment.date() or any(row.handable for row in rows)
    return Desk(day, (first_room, last_room), rows, live)


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
    "handed_grace": _(
        "Handed over within its pickup grace after midnight: the booking is collected for its "
        "day and its code no longer opens."
    ),
    "not_today": _(
        "This booking is not due now: only today's pickups, and yesterday's while their grace "
        "after midnight runs, are handed over."
    ),
}


def booking_handover(
    *,
    client: redis.Redis,
    booking_id: str,
    actor_id: str,
    note: str = "",
    now: dt.datetime | None = None,
    request_id: str | None = None,
    day: dt.date | None = None,
) -> HandoverResult:
    """Staff hand today's treasure over without the code; the staff member, the time and the
    note go into the room's audit, and the code stops opening. `day` (default today) may be
    yesterday while that day's pickup window is still open (the grace after 24:00): the
    function checks it, as the kiosk does, in the same step as the write."""
    room = booking_id_room(booking_id)
    if room is None or not actor_id:
        return HandoverResult(False, "not_found", HANDOVER_MESSAGES["not_found"])
    keys = RoomKeys(room)
    moment = local_now(now)
    today = moment.date()
    call = HANDOVER.call(
        keys={
            "record": keys.record(booking_id),
            "audit": keys.audit,
            "stats": keys.stats,
            "edition": keys.edition,
        },
        args={
            "actor": actor_id,
            "today": today.isoformat(),
            "note": reason_clean(note),
            "now_ms": to_ms(moment),
            "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
            "room": format_room(room),
            "request_id": request_id if request_id_valid(request_id) else request_id_new(),
            "day": (day or today).isoformat(),
            "yesterday": (today - dt.timedelta(days=1)).isoformat(),
            "minute": moment.hour * 60 + moment.minute,
            "grace_minutes": settings.STRONGROOM_PICKUP_GRACE_MINUTES,
        },
    )
    answer = HANDOVER.answer_of(durable_fcall(client, HANDOVER.name, *call, first=True))
    outcome = answer["status"]
    if outcome == "invalid":
        raise ValueError(f"booking_handover refused the call ({answer['what']})")
    record = answer.get("record")
    booking = booking_from_hash(flat_to_dict(record)) if record else None
    message = HANDOVER_MESSAGES[outcome]
    if (
        outcome == "handed"
        and booking is not None
        and _row(booking, day or today, moment).hours_over
    ):
        message = HANDOVER_MESSAGES["handed_late"]
    elif outcome == "handed" and day is not None and day < today:
        message = HANDOVER_MESSAGES["handed_grace"]
    return HandoverResult(outcome == "handed", outcome, message, booking)
