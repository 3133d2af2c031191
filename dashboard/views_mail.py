"""The mail queue: what the outbox still holds, for staff (strongroom/outbox.py)."""

from __future__ import annotations

import datetime as dt

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from accounts.access import staff_required
from strongroom import keyspace as ks
from strongroom.outbox import outbox_pending
from strongroom.store import get_store

QUEUE_SHOWN = 200


def _outbox_name(key: str) -> str:
    if ks.BOOKING_OUTBOX.matches(key):
        return _("room %(room)s") % {"room": ks.BOOKING_OUTBOX.parse(key)["room"]}
    return _("accounts")


@require_GET
@staff_required
def mail_queue(request: HttpRequest) -> HttpResponse:
    """Queued messages, the oldest due first, with their attempts and last error."""
    pending = outbox_pending(client=get_store(), limit=QUEUE_SHOWN)
    rows = [
        {
            "kind": p.kind,
            "about": p.member.split("|", 1)[1] if "|" in p.member else "",
            "where": _outbox_name(p.mailbox),
            "due": dt.datetime.fromtimestamp(p.due_ms / 1000, tz=dt.UTC),
            "attempts": p.attempts,
            "error": p.last_error,
        }
        for p in pending
    ]
    context = {"rows": rows, "section": "mail", "shown": QUEUE_SHOWN}
    return render(request, "dashboard/mail.html", context)
