"""Booking mail, rendered when sent (strongroom/outbox_delivery.py) in the buyer's language: the
receipt (pickup code and an .ics file), the cancellation (with the staff's reason) and the
waiting list's "it is free" notice."""

from __future__ import annotations

import dataclasses
import datetime as dt
from email.mime.text import MIMEText
from functools import partial
from urllib.parse import unquote

import redis
from django.conf import settings
from django.core.mail import EmailMessage
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.formats import date_format
from django.utils.translation import gettext
from django.utils.translation import gettext_noop as noop

from accounts.mail import message_build, site_url
from accounts.selectors import MailTarget, mail_target, mail_target_from, mail_target_read
from booking.domain.calendar_files import booking_ics
from booking.domain.codes import code_display
from booking.domain.formats import WAIT_FIELDS, fields_join, outbox_fields
from booking.domain.keys import RoomKeys
from booking.domain.records import Booking, booking_from_hash
from booking.engine.bookings import booking_get, booking_read
from booking.engine.priority import priority_grant
from booking.engine.unsure import booking_settle
from booking.engine.waits import notice_of, wait_of
from strongroom import keyspace as ks
from strongroom.addresses import address_from_arg
from strongroom.ahead import command, keep_replies, pipeline_replies, read_together
from strongroom.decoders import text_hash, text_or_none
from strongroom.outbox import FIELD, MailKind, entry, sender_wake, write_with_ack


def calendar_part(reference: str, calendar: bytes, *, method: str) -> MIMEText:
    """The .ics attachment, whose type names its iTIP method (text/calendar; method=...)."""
    part = MIMEText(calendar.decode("utf-8"), "calendar", "utf-8")
    part.set_param("method", method)
    part.add_header("Content-Disposition", "attachment", filename=f"{reference}.ics")
    return part


RECEIPTS_OWED_S = 30 * 24 * 3600
RECEIPT_LATE = dt.timedelta(minutes=15)  # a receipt sent later says when the booking was made


def receipt_owed(*, client: redis.Redis, owner_id: int, booking_id: str) -> None:
    """Remember a receipt that found no confirmed address: sent once one is confirmed. Written
    with the entry's acknowledgement (a pass writes those of all its receipts at once)."""
    key = ks.BOOKING_RECEIPTS_OWED.key(owner_id=owner_id)
    write_with_ack(
        client, command("SADD", key, booking_id), command("EXPIRE", key, RECEIPTS_OWED_S)
    )


def receipts_owed_send(*, client: redis.Redis, person_id: int) -> None:
    """Queue again the receipts of `person_id` that found no confirmed address (their address
    is confirmed now); the renderer still drops those of bookings cancelled since."""
    key = ks.BOOKING_RECEIPTS_OWED.key(owner_id=person_id)
    pipe = client.pipeline(transaction=True)
    pipe.smembers(key)
    pipe.delete(key)
    owed = sorted(pipe.execute()[0])
    boxes = []
    for booking_id in owed:
        room = booking_id.split("-", 1)[0]
        if not room.isdigit():
            continue
        box = ks.BOOKING_OUTBOX.key(room=room)
        client.xadd(box, {FIELD: entry("confirm", booking_id, person_id)})
        boxes.append(box)
    if boxes:
        sender_wake(*boxes)


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
    nothing (and the booking unread) when the owner has no verified address: then it is owed,
    and queued again once they confirm one."""
    named = _named_owner("confirm", args)
    booking_id = outbox_fields("confirm", args)["booking_id"]
    target = mail_target(client=client, person_id=named) if named is not None else None
    if named is not None and target is None:
        receipt_owed(client=client, owner_id=named, booking_id=booking_id)
        return None
    booking = booking_get(client=client, booking_id=booking_id)
    if booking is None or booking.status == "cancelled" or _owner(booking) is None:
        return None
    if target is None or target.person_id != _owner(booking):
        target = mail_target(client=client, person_id=_owner(booking) or 0)
    if target is None:
        return None
    settled = _settled(client, booking)
    booked = noop("Booked: %(reference)s, room %(room)s")
    # Owed until an address was confirmed (or held up): it says when the booking was made.
    late = timezone.now() - booking.created_at > RECEIPT_LATE
    made = {"made": timezone.localtime(booking.created_at), "late": late}
    return _code_mail(settled, target, booked, "confirmed", more=made) if settled else None


def cancel_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: booking id. Who cancelled (the buyer or the staff, with the staff's reason)."""
    booking = booking_get(client=client, booking_id=outbox_fields("cancel", args)["booking_id"])
    if booking is None or booking.status != "cancelled" or _owner(booking) is None:
        return None
    target = mail_target(client=client, person_id=_owner(booking) or 0)
    if target is None:
        return None
    return _cancel_message(booking, target, by_staff=booking.cancelled_by != booking.owner_id)


def cancel_to_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: OUTBOX_CANCEL_TO. A booking cancelled by the deletion of its buyer's account (by
    them, or by staff: `by`), to the address they had then (queued in the same call as the
    cancel: once per booking)."""
    fields = outbox_fields("cancel_to", args)
    booking = booking_get(client=client, booking_id=fields["booking_id"])
    if booking is None or booking.status != "cancelled" or not fields["address"]:
        return None
    language = fields["lang"] if fields["lang"] in dict(settings.LANGUAGES) else "en"
    target = MailTarget(0, unquote(fields["name"]), address_from_arg(fields["address"]), language)
    by_staff = fields["by"] == "staff"
    return _cancel_message(booking, target, by_staff=by_staff, deleted=True)


def _cancel_message(
    booking: Booking, target: MailTarget, *, by_staff: bool, deleted: bool = False
) -> EmailMessage:
    """The cancellation mail, with the booking's events CANCELLED."""
    with translation.override(target.language):
        message = message_build(
            target=target,
            subject=gettext("Cancelled: %(reference)s, room %(room)s")
            % {"reference": booking.reference, "room": booking.room_label},
            template="mail/booking_cancelled.txt",
            context={
                **_booking_context(booking),
                "by_staff": by_staff,
                "account_deleted": deleted,
                "reason": booking.cancel_reason,
                "mine": site_url(reverse("booking:mine")),
            },
        )
        # The receipt's events again, CANCELLED (same UIDs, next sequence): opening it takes
        # the booking out of the calendar it was added to.
        url = site_url(reverse("booking:done", args=[booking.id]))
        calendar = booking_ics(
            booking, url=url, language=target.language, method="CANCEL", attendee=target.email
        )
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
    # Until when the priority hold lasts: this buyer's own, or the first waiter's on this slot
    # (the notice names its end; given back, the notice no longer does).
    until = notice.expires_at if notice else None
    # Granted if the buyer may have it (at most a few at once), and only then usable and shown
    # on every page while it lasts (booking.engine.priority); else it is everyone's.
    if hold_id and priority_grant(client=client, person_id=int(person), hold_id=hold_id) != (
        "granted"
    ):
        hold_id, until = "", None
    if until is not None and until <= timezone.now():
        until = None  # the first waiter's hour is over: it is everyone's
    target = mail_target(client=client, person_id=int(person))
    if target is None:
        return None
    with translation.override(target.language):
        return message_build(
            target=target,
            subject=gettext("Free again: class %(cls)s, room %(room)s, %(date)s")
            % {"cls": wait.cls, "room": room, "date": date_format(wait.date)},
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
    # A move's steps do not mark the booking: its mail waits for a durable call in any case.
    settled = _settled(client, booking, always=True)
    moved = noop("Moved: %(reference)s, room %(room)s")
    return _code_mail(settled, target, moved, "moved") if settled else None


# Plugged into the outbox by booking's AppConfig.ready (formats.OUTBOX_ENTRIES: the same kinds).
def remind_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: booking id, its first day. Tomorrow's pickup: the code, the room, the hours and
    the calendar file, in the buyer's language; nothing when the booking is no longer due
    that day (moved, cancelled) or the buyer has no confirmed address."""
    booking = booking_get(client=client, booking_id=args[0])
    if booking is None or booking.status != "confirmed" or _owner(booking) is None:
        return None
    if len(args) < 2 or booking.dates[0].isoformat() != args[1]:
        return None
    target = mail_target(client=client, person_id=_owner(booking) or 0)
    if target is None:
        return None
    settled = _settled(client, booking)
    tomorrow = noop("Tomorrow: %(reference)s, room %(room)s")
    return _code_mail(settled, target, tomorrow, "reminder", method=None) if settled else None


def _settled(client: redis.Redis, booking: Booking, *, always: bool = False) -> Booking | None:
    """No mail carries the code of a booking the store has not confirmed: a marked one (or,
    `always`, any) is settled first (booking.engine.unsure); NotDurable fails the send, and
    the mail is tried again later. None: the store no longer has it (lost with a primary)."""
    if not booking.unsure and not always:
        return booking
    if not booking_settle(client=client, booking_id=booking.id):
        return None
    return dataclasses.replace(booking, unsure=False)


def _code_mail(
    booking: Booking,
    target: MailTarget,
    subject: str,
    template: str,
    *,
    method: str | None = "REQUEST",
    more: dict[str, object] | None = None,
) -> EmailMessage:
    """A mail that carries the pickup code and the booking's calendar event (the receipt, the
    move, the reminder): `subject` (marked with noop) and `mail/booking_<template>.txt` in the
    reader's language; the event with `method` (none: a plain .ics attachment)."""
    with translation.override(target.language):
        message = message_build(
            target=target,
            subject=gettext(subject) % {"reference": booking.reference, "room": booking.room_label},
            template=f"mail/booking_{template}.txt",
            context={
                **_booking_context(booking),
                "code": code_display(booking.pickup_code()),
                **(more or {}),
            },
        )
        url = site_url(reverse("booking:done", args=[booking.id]))
        calendar = booking_ics(
            booking, url=url, language=target.language, method=method, attendee=target.email
        )
    if method is None:
        message.attach(f"{booking.reference}.ics", calendar, "text/calendar")
    else:
        message.attach(calendar_part(booking.reference, calendar, method=method))
    return message


MAIL_KINDS = (
    MailKind("confirm", confirm_render, prepare=partial(_bookings_and_owners, kind="confirm")),
    MailKind("cancel", cancel_render, prepare=partial(_bookings_and_owners, kind="cancel")),
    MailKind("cancel_to", cancel_to_render),
    MailKind("freed", freed_render),
    MailKind("moved", moved_render, prepare=partial(_bookings_and_owners, kind="moved")),
    MailKind("remind", remind_render),
)
