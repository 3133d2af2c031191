"""What every staff page shares: rendering under templates/dashboard/, the not-found page, the
rows of an audit table; and the person page's contents (its own view and the book-for form's
refusal show it)."""

from __future__ import annotations

from typing import Any

import redis
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.access import signed_in_person
from accounts.selectors import login_summary
from booking.domain.rules import request_id_new
from booking.selectors import (
    bookings_of,
    bookings_of_read,
    hold_current,
    hold_current_read,
    references_of,
    waits_of,
    waits_of_read,
)
from dashboard.audit_words import detail_label, kind_label
from dashboard.selectors import LogEntry
from strongroom.ahead import read_together
from strongroom.store import get_store


def render_page(
    request: HttpRequest, template: str, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    return render(request, f"dashboard/{template}", context, status=status)


def log_rows(
    entries: list[LogEntry], *, client: redis.Redis, known: dict[str, str] | None = None
) -> list[tuple[LogEntry, Any, Any, str]]:
    """(entry, shown kind, shown detail, the booking's reference) for the log table (which
    names the actors from the page's `names`, as every staff page does: _owner.html);
    `known`: references the page has read already."""
    ids = [e.booking_id for e in entries if e.kind != "hold"]  # a hold's id names no booking
    refs = references_of(client=client, booking_ids=ids, known=known)
    return [
        (e, kind_label(e.kind), detail_label(e.kind, e.detail), refs.get(e.booking_id, ""))
        for e in entries
    ]


def not_found(request: HttpRequest, message: str) -> HttpResponse:
    return render_page(request, "not_found.html", {"message": message}, status=404)


def person_context(request: HttpRequest, person_id: int) -> dict[str, Any] | None:
    """What the person page shows (None: nobody has this id), with a blank book-for form."""
    client = get_store()
    summary = login_summary(client=client, person_id=person_id)
    if summary is None:
        return None
    owner = str(person_id)
    # The three lists' first reads in one round trip (each then reads what they name).
    read_together(
        client,
        bookings_of_read(client=client, owner_id=owner, limit=100),
        hold_current_read(owner_id=owner),
        waits_of_read(owner_id=owner),
    )
    return {
        "person": summary.person,
        "summary": summary,
        "bookings": bookings_of(client=client, owner_id=owner, limit=100),
        # What they have in hand besides bookings: a hold, and the waiting lists they are on.
        "hold": hold_current(client=client, owner_id=owner),
        "waits": waits_of(client=client, owner_id=owner),
        "request_id": request_id_new(),
        "hours": list(range(25)),
        "section": "people",
        "is_me": signed_in_person(request).id == person_id,
        "book": {},
    }
