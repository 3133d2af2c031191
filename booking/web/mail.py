"""Booking mail, rendered when sent (strongroom/outbox.py) in the buyer's language: the
receipt (pickup code and an .ics file), the cancellation (with the staff's reason) and the
waiting list's "it is free" notice."""

from __future__ import annotations

from email.mime.text import MIMEText
from functools import partial

import redis
from django.core.mail import EmailMessage
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext

from accounts.mail import message_build, site_url
from accounts.selectors import mail_target, mail_target_from, mail_target_read
from booking.domain.calendar_files import booking_ics
from booking.domain.codes import code_display
from booking.domain.formats import WAIT_FIELDS, fields_join, outbox_fields
from booking.domain.keys import RoomKeys
from booking.domain.records import Booking, booking_from_hash
from booking.engine.bookings import booking_get, booking_read
from booking.engine.priority import priority_note
from booking.engine.waits import notice_of, wait_of
from strongroom.ahead import keep_replies, pipeline_replies, read_together
from strongroom.clock import to_ms
from strongroom.outbox import MailKind
from strongroom.store import text_hash, text_or_none


def calendar_part(reference: str, calendar: bytes, *, method: str) -> MIMEText:
    """The .ics attachment, whose type names its iTIP method (text/calendar; method=...)."""
    part = MIMEText(calendar.decode("utf-8"), "calendar", "utf-8")
    part.set_param("method", method)
    part.add_header("Content-Disposition", "attachment", filename=f"{reference}.ics")
    return part


def _owner(booking: Booking) -> int | None:
    return int(booking.owner_id) if booking.owner_id.isdigit() else None


def _booking_context(booking: Booking) -> dict[str, object]:
    return {
        "booking": booking,
        "first_day": booking.dates[0],
        "link": site_url(reverse("booking:done", args=[booking.id])),
    }


def _named_owner(kind: str, args: list[str]) -> int | None:
    """The owner an entry names (only a receipt's, OUTBOX_CONFIRM, names one; entries queued
    before the owner was named have none)."""
    owner = outbox_fields(kind, args).get("owner", "")
    return int(owner) if owner.isdigit() else None


def _bookings_and_owners(client: redis.Redis, arguments: list[list[str]], kind: str) -> None:
    """Before a batch of receipts, cancellations or moves (OUTBOX_* of `kind`): the named
    owners' addresses; then the bookings still needed (not those of owners without a verified
    address) with the addresses of the owners no entry names. All kept for the renders: a few
    round trips for the batch instead of two a message."""
    named = [_named_owner(kind, args) for args in arguments]
    reads = [mail_target_read(person_id=owner) for owner in named if owner is not None]
    flat = [cmd for read in reads for cmd in read]
    keep_replies(flat, addresses := pipeline_replies(client, flat))
    reachable = {
        owner
        for owner, reply in zip((o for o in named if o is not None), addresses, strict=True)
        if mail_target_from(owner, reply) is not None
    }
    needed = [
        outbox_fields(kind, args)["booking_id"]
        for args, owner in zip(arguments, named, strict=True)
        if args and (owner is None or owner in reachable)
    ]
    records = [cmd for booking_id in needed for cmd in booking_read(booking_id=booking_id)]
    replies = pipeline_replies(client, records)
    keep_replies(records, replies)
    bookings = [booking_from_hash(text_hash(reply)) for reply in replies]
    # One read per message, not per person: a read ahead is served once.
    unnamed = [
        owner for b in bookings if b is not None and (owner := _owner(b)) and owner not in reachable
    ]
    read_together(client, *(mail_target_read(person_id=owner) for owner in unnamed))


def confirm_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: booking id, owner. The receipt, with the pickup code and the booking as .ics;
    nothing (and the booking unread) when the owner has no verified address."""
    named = _named_owner("confirm", args)
    target = mail_target(client=client, person_id=named) if named is not None else None
    if named is not None and target is None:
        return None
    booking = booking_get(client=client, booking_id=outbox_fields("confirm", args)["booking_id"])
    if booking is None or booking.status == "cancelled" or _owner(booking) is None:
        return None
    if target is None or target.person_id != _owner(booking):
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
        calendar = booking_ics(booking, url=url, language=target.language, method="REQUEST")
    message.attach(calendar_part(booking.reference, calendar, method="REQUEST"))
    return message


def cancel_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: booking id. Who cancelled (the buyer or the staff, with the staff's reason)."""
    booking = booking_get(client=client, booking_id=outbox_fields("cancel", args)["booking_id"])
    if booking is None or booking.status != "cancelled" or _owner(booking) is None:
        return None
    target = mail_target(client=client, person_id=_owner(booking) or 0)
    if target is None:
        return None
    by_staff = booking.cancelled_by != booking.owner_id
    with translation.override(target.language):
        message = message_build(
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
        # The receipt's events again, CANCELLED (same UIDs, next sequence): opening it takes
        # the booking out of the calendar it was added to.
        url = site_url(reverse("booking:done", args=[booking.id]))
        calendar = booking_ics(booking, url=url, language=target.language, method="CANCEL")
    message.attach(calendar_part(booking.reference, calendar, method="CANCEL"))
    return message


def freed_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: OUTBOX_FREED. The slot a buyer waited for is free; the first in line holds it
    for a few minutes."""
    freed = outbox_fields("freed", args)
    room, person = freed["room"], freed["person"]
    if not person.isdigit():
        return None
    member = fields_join(freed, WAIT_FIELDS)
    _person, wait = wait_of(int(room), member)
    notice = notice_of(text_or_none(client.hget(RoomKeys(int(room)).wait_notices, member)))
    hold_id = notice.hold_id if notice else ""
    until = notice.expires_at if notice else None
    if hold_id and until is not None:
        # Kept if the buyer may (at most a few at once), and then shown on every page while it
        # lasts, mail or no mail (booking.engine.priority); else it opens to everyone now.
        kept = priority_note(
            client=client, person_id=int(person), hold_id=hold_id, expires_ms=to_ms(until)
        )
        if not kept:
            hold_id, until = "", None
    target = mail_target(client=client, person_id=int(person))
    if target is None:
        return None
    with translation.override(target.language):
        return message_build(
            target=target,
            subject=gettext("Free again: class %(cls)s, room %(room)s, %(date)s")
            % {"cls": wait.cls, "room": room, "date": wait.date.isoformat()},
            template="mail/wait_freed.txt",
            context={
                "cls": wait.cls,
                "room": room,
                "date": wait.date,
                "hours": wait.hours,
                "box": wait.box,
                "priority": bool(hold_id),
                "until": timezone.localtime(until) if until else None,
                "confirm": site_url(reverse("booking:confirm", args=[hold_id])) if hold_id else "",
                "book": site_url(reverse("booking:pick")),
            },
        )


def moved_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: booking id, the move's number. The booking as it is now, with its new pickup code
    and its calendar events (same UIDs, higher SEQUENCE); nothing for a move a later one
    replaced (that one's mail says it all) or a booking cancelled since."""
    entry = outbox_fields("moved", args)
    booking = booking_get(client=client, booking_id=entry["booking_id"])
    if booking is None or booking.status != "confirmed" or _owner(booking) is None:
        return None
    if entry["sequence"].isdigit() and int(entry["sequence"]) < booking.seq:
        return None
    target = mail_target(client=client, person_id=_owner(booking) or 0)
    if target is None:
        return None
    with translation.override(target.language):
        message = message_build(
            target=target,
            subject=gettext("Moved: %(reference)s, room %(room)s")
            % {"reference": booking.reference, "room": booking.room_label},
            template="mail/booking_moved.txt",
            context={**_booking_context(booking), "code": code_display(booking.pickup_code())},
        )
        url = site_url(reverse("booking:done", args=[booking.id]))
        calendar = booking_ics(booking, url=url, language=target.language, method="REQUEST")
    message.attach(calendar_part(booking.reference, calendar, method="REQUEST"))
    return message


# Plugged into the outbox by booking's AppConfig.ready (formats.OUTBOX_ENTRIES: the same kinds).
MAIL_KINDS = (
    MailKind("confirm", confirm_render, prepare=partial(_bookings_and_owners, kind="confirm")),
    MailKind("cancel", cancel_render, prepare=partial(_bookings_and_owners, kind="cancel")),
    MailKind("freed", freed_render),
    MailKind("moved", moved_render, prepare=partial(_bookings_and_owners, kind="moved")),
)
