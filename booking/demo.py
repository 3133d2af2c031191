"""Demo bookings for the demo buyers (idempotent: ids are derived, so a rerun is a retry)."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib

import redis

from booking.domain.parser import InvalidRequest, slot_request_parse
from booking.domain.rules import format_room, season_days, site_today
from booking.engine.claims import booking_claim

# (buyer, class, room, day offset from the first bookable day, hours, boxes)
PLAN = [
    ("anna", "A", 158, 0, None, None),
    ("anna", "B", 158, 1, ("08:00", "12:00"), None),
    ("bo", "C", 7, 0, ("09:00", "11:00"), "1,2,3"),
    ("bo", "A", 42, 3, None, None),
    ("chen", "C", 7, 0, ("10:00", "14:00"), "50"),
    ("chen", "B", 300, 2, ("18:00", "20:00"), None),
]


def _demo_id(room: int, *parts: object) -> str:
    digest = hashlib.sha256(repr(("strongroom-demo", *parts)).encode()).digest()[:16]
    return f"{format_room(room)}-" + base64.b32encode(digest).decode().rstrip("=").lower()


def load_demo(client: redis.Redis) -> list[str]:
    """A few bookings of the demo buyers (made by accounts' demo) on the next bookable days."""
    from accounts.selectors import person_find

    today = site_today()
    bookable = [d for d in season_days() if d > today]
    lines = []
    for index, (name, cls, room, offset, hours, boxes) in enumerate(PLAN):
        person = person_find(client=client, username=name)
        if person is None or offset >= len(bookable):
            continue
        date: dt.date = bookable[offset]
        try:
            request = slot_request_parse(
                cls=cls,
                room=room,
                dates=[date],
                hour_start=hours[0] if hours else None,
                hour_end=hours[1] if hours else None,
                boxes=boxes,
            )
        except InvalidRequest:
            continue
        result = booking_claim(
            client=client,
            owner_id=str(person.id),
            request=request,
            booking_id=_demo_id(room, name, index, date),
        )
        if result.ok:
            lines.append(f"{name}: class {cls}, room {format_room(room)}, {date}")
    return lines
