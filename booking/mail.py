"""Booking mail, rendered when sent (strongroom/outbox.py) in the buyer's language: the
receipt (pickup code and an .ics file), the cancellation (with the staff's reason) and the
waiting list's "it is free" notice."""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlsplit

import redis
from django.conf import settings
from django.core.mail import EmailMessage
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext

from accounts.mail import message_build, site_url
from accounts.selectors import mail_target, mail_target_read
from booking.calendar_files import booking_ics
from booking.codes import code_display
from booking.keys import RoomKeys
from booking.records import Booking, booking_from_hash, booking_get, booking_read
from booking.rules import season_start
from strongroom.ahead import keep_replies, pipeline_replies, read_together
from strongroom.clock import from_ms
from strongroom.outbox import renderer
from strongroom.store import text_hash


def _host() -> str:
    return urlsplit(settings.STRONGROOM_SITE_URL).hostname or "localhost"


def _owner(booking: Booking) -> int | None:
    return int(booking.owner_id) if booking.owner_id.isdigit() else None


def _booking_context(booking: Booking) -> dict[str, object]:
    return {
        "booking": booking,
        "first_day": booking.dates[0],
        "link": site_url(reverse("booking:done", args=[booking.id])),
    }


def _bookings_and_owners(client: redis.Redis, arguments: list[list[str]]) -> None:
    """Before a batch of receipts or cancellations (args: booking id): their bookings, then
    their owners' addresses, both kept for the renders. Two round trips for the batch instead
    of two a message (each reads its booking, then its owner)."""
    records = [cmd for args in arguments if args for cmd in booking_read(booking_id=args[0])]
    replies = pipeline_replies(client, records)
    keep_replies(records, replies)
    bookings = [booking_from_hash(text_hash(reply)) for reply in replies]
    # One read per message, not per person: a read ahead is served once.
    owners = [owner for b in bookings if b is not None and (owner := _owner(b))]
    read_together(client, *(mail_target_read(person_id=owner) for owner in owners))


@renderer("confirm", prepare=_bookings_and_owners)
def confirm_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: booking id. The receipt, with the pickup code and the booking as .ics."""
    booking = booking_get(client=client, booking_id=args[0])
    if booking is None or booking.status == "cancelled" or _owner(booking) is None:
        return None
    target = mail_target(client=client, person_id=_owner(booking) or 0)
    if target is None:
        return None
    with translation.override(target.language):
        message = message_build(
            target=target,
            subject=gettext("Booked: %(reference)s, room %(room)s")
            % {"reference": booking.reference, "room": booking.room_label},
            template="mail/booking_confirmed.txt",
            context={**_booking_context(booking), "code": code_display(booking.pickup_code())},
        )
        url = site_url(reverse("booking:done", args=[booking.id]))
        calendar = booking_ics(booking, host=_host(), url=url, language=target.language)
    message.attach(f"{booking.reference}.ics", calendar, "text/calendar")
    return message


@renderer("cancel", prepare=_bookings_and_owners)
def cancel_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: booking id. Who cancelled (the buyer or the staff, with the staff's reason)."""
    booking = booking_get(client=client, booking_id=args[0])
    if booking is None or booking.status != "cancelled" or _owner(booking) is None:
        return None
    target = mail_target(client=client, person_id=_owner(booking) or 0)
    if target is None:
        return None
    by_staff = booking.cancelled_by != booking.owner_id
    with translation.override(target.language):
        return message_build(
            target=target,
            subject=gettext("Cancelled: %(reference)s, room %(room)s")
            % {"reference": booking.reference, "room": booking.room_label},
            template="mail/booking_cancelled.txt",
            context={
                **_booking_context(booking),
                "by_staff": by_staff,
                "reason": booking.cancel_reason,
                "mine": site_url(reverse("booking:mine")),
            },
        )


@renderer("freed")
def freed_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: room, person, cls, day, start, end, box, told ms. The slot a buyer waited for is
    free; the first in line holds it for a few minutes."""
    room, person, cls, day, start, end, box = args[:7]
    if not person.isdigit():
        return None
    target = mail_target(client=client, person_id=int(person))
    if target is None:
        return None
    member = "|".join(args[1:7])
    notice = client.hget(RoomKeys(int(room)).wait_notices, member)
    hold_id, until = "", None
    if notice:
        _told, hold_id, expiry, _room = ([*str(notice).split("|"), "", "", ""])[:4]
        until = from_ms(expiry or None)
    date = season_start() + dt.timedelta(days=int(day))
    with translation.override(target.language):
        return message_build(
            target=target,
            subject=gettext("Free again: class %(cls)s, room %(room)s, %(date)s")
            % {"cls": cls, "room": room, "date": date.isoformat()},
            template="mail/wait_freed.txt",
            context={
                "cls": cls,
                "room": room,
                "date": date,
                "hours": None if cls == "A" else (int(start), int(end)),
                "box": int(box) or None,
                "priority": bool(hold_id),
                "until": timezone.localtime(until) if until else None,
                "confirm": site_url(reverse("booking:confirm", args=[hold_id])) if hold_id else "",
                "book": site_url(reverse("booking:pick")),
            },
        )
