"""The reminder the day before a pickup: once per booking (its first day), queued by the mail
sender's full pass (plugged in by booking/apps.py) and rendered in the buyer's language with the
code, the room, the hours and the calendar file (booking/web/mail.py), to confirmed addresses
only (the renderer drops the others)."""

from __future__ import annotations

import datetime as dt

import redis

from booking.domain.rules import local_now
from booking.engine.bookings import bookings_between
from strongroom import keyspace as ks
from strongroom.outbox import mail_queue

REMINDER_LIMIT = 5000  # bookings one pass looks at (a day of the building is far fewer)
KEEP_S = 3 * 86400  # a day's reminder marks outlive the day


def reminders_queue(*, client: redis.Redis, now: dt.datetime | None = None) -> int:
    """Queue the reminder of every confirmed booking whose first day is tomorrow (site time)
    and that has none yet. Each mark and its outbox entry are written in one transaction (one
    tag), so a sender that dies in between has written neither. Returns how many were queued."""
    tomorrow = local_now(now).date() + dt.timedelta(days=1)
    due = [
        b
        for b in bookings_between(client=client, start=tomorrow, end=tomorrow, limit=REMINDER_LIMIT)
        if b.status == "confirmed" and b.dates[0] == tomorrow
    ]
    if not due:
        return 0
    marks = ks.MAIL_REMINDED.key(date=tomorrow.isoformat())
    known = client.smismember(marks, [b.id for b in due])
    fresh = [b for b, seen in zip(due, known, strict=True) if not seen]
    for booking in fresh:
        pipe = client.pipeline(transaction=True)
        pipe.sadd(marks, booking.id)
        pipe.expire(marks, KEEP_S)
        mail_queue(pipe, kind="remind", args=(booking.id, tomorrow.isoformat()))
        pipe.execute()
    return len(fresh)


def reminders_sweep(client: redis.Redis) -> None:
    """The sender's full pass queues the day's reminders."""
    reminders_queue(client=client)
