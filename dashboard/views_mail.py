"""The mail queue: what the outbox still holds and the dead letters, for staff
(strongroom/outbox.py)."""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from accounts.access import staff_required
from strongroom import keyspace as ks
from strongroom.outbox import dead_letter_discard, dead_letter_retry, outbox_view
from strongroom.store import get_store

QUEUE_SHOWN = 200


def _outbox_name(key: str) -> str:
    if ks.BOOKING_OUTBOX.matches(key):
        return _("room %(room)s") % {"room": ks.BOOKING_OUTBOX.parse(key)["room"]}
    return _("accounts")


def _when(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


@require_safe
@staff_required
def mail_queue(request: HttpRequest) -> HttpResponse:
    """Queued messages, the soonest due first, with their attempts and last error; then the
    dead letters (every try failed), each with "retry" and "discard"."""
    pending, dead = outbox_view(client=get_store(), limit=QUEUE_SHOWN)
    rows = [
        {
            "kind": p.kind,
            "about": p.member.split("|", 1)[1] if "|" in p.member else "",
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
            "about": d.member.split("|", 1)[1] if "|" in d.member else "",
            "where": _outbox_name(d.mailbox),
            "first": _when(d.first_failure_ms),
            "dead": _when(d.dead_ms),
            "attempts": d.attempts,
            "error": d.error,
        }
        for d in dead
    ]
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
