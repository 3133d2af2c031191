"""The mail queue: what the outbox still holds and the dead letters, for staff
(strongroom/outbox.py)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import redis
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from accounts.access import staff_required
from booking.selectors import outbox_subject, references_of
from dashboard.selectors import names_of
from strongroom import keyspace as ks
from strongroom.outbox import dead_letter_discard, dead_letter_retry, outbox_view
from strongroom.store import get_store

QUEUE_SHOWN = 200


def _outbox_name(key: str) -> str:
    if ks.BOOKING_OUTBOX.matches(key):
        return _("room %(room)s") % {"room": ks.BOOKING_OUTBOX.parse(key)["room"]}
    return _("accounts")


def _about(mailbox: str, member: str) -> dict[str, str]:
    """What a message is about, in staff words: a booking (its id, for its reference) or a
    person (an account mail, whose first argument names them; a waiting-list notice)."""
    if ks.BOOKING_OUTBOX.matches(mailbox):
        subject = outbox_subject(member)
        return {"booking_id": subject.booking_id, "person_id": subject.person_id}
    first = member.split("|")[1] if member.count("|") else ""
    return {"booking_id": "", "person_id": first if first.isascii() and first.isdigit() else ""}


def _in_staff_words(client: redis.Redis, abouts: list[Any]) -> None:
    """Each booking's reference, the one people read out ('' for a booking no longer stored),
    and each person's name ('' for one no longer stored): a pipeline, none when no message is
    about a booking, and one read, none when none is about a person alone."""
    wanted = [about["booking_id"] for about in abouts if about["booking_id"]]
    references = references_of(client=client, booking_ids=wanted) if wanted else {}
    people = [
        about["person_id"] for about in abouts if about["person_id"] and not about["booking_id"]
    ]
    names = names_of(client=client, ids=people) if people else {}
    for about in abouts:
        about["reference"] = references.get(about["booking_id"], "")
        person = about["person_id"]
        about["name"] = names.get(int(person), "") if person.isascii() and person.isdigit() else ""


def _when(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


@require_safe
@staff_required
def mail_queue(request: HttpRequest) -> HttpResponse:
    """Queued messages, the soonest due first, with their attempts and last error; then the
    dead letters (every try failed), each with "retry" and "discard"."""
    client = get_store()
    pending, dead = outbox_view(client=client, limit=QUEUE_SHOWN)
    rows = [
        {
            "kind": p.kind,
            "about": _about(p.mailbox, p.member),
            "where": _outbox_name(p.mailbox),
            "due": _when(p.due_ms),
            "attempts": p.attempts,
            "error": p.last_error,
        }
        for p in pending
    ]
    letters = [
        {
            "key": d.key,
            "kind": d.kind,
            "about": _about(d.mailbox, d.member),
            "where": _outbox_name(d.mailbox),
            "first": _when(d.first_failure_ms),
            "dead": _when(d.dead_ms),
            "attempts": d.attempts,
            "error": d.error,
        }
        for d in dead
    ]
    _in_staff_words(client, [*(row["about"] for row in rows), *(d["about"] for d in letters)])
    context = {"rows": rows, "dead": letters, "section": "mail", "shown": QUEUE_SHOWN}
    return render(request, "dashboard/mail.html", context)


@require_POST
@staff_required
def mail_dead_letter(request: HttpRequest) -> HttpResponse:
    """Retry (queue again) or discard one dead letter."""
    key, action = request.POST.get("letter", ""), request.POST.get("action", "")
    client = get_store()
    if action == "retry" and dead_letter_retry(client=client, key=key):
        messages.success(request, _("The message is queued again."))
    elif action == "discard" and dead_letter_discard(client=client, key=key):
        messages.success(request, _("The message is discarded."))
    else:
        messages.error(request, _("That message is no longer among the dead letters."))
    return HttpResponseRedirect(reverse("dashboard:mail"))
