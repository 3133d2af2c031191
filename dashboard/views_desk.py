"""The pickup desk (/staff/desk/): the bookings due on a day in a range of rooms, collected or
not, with live counts; "hand over" marks today's pickup done without the code. Printable, and
laid out for a phone at the door."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from accounts.access import signed_in_person, staff_required
from booking.domain.refusals import shown_value
from booking.domain.rules import local_now, request_id_new, room_count
from booking.domain.values import room_number
from booking.selectors import desk_read
from booking.services import booking_handover
from dashboard.pages import render_page
from dashboard.selectors import names_of
from strongroom.middleware import form_action
from strongroom.store import get_store

HANDOVER_NOTE_MAX = 200  # the desk form's maxlength (templates/dashboard/desk.html)


def _desk_query(data: Mapping[str, str]) -> tuple[dt.date, int, int, list[str]]:
    """The day (default today) and the room range (default every room) of a desk request, and
    what could not be read."""
    problems = []
    today = local_now().date()
    text = str(data.get("day", "") or "")
    day: dt.date | None = today
    if text:  # YYYY-MM-DD, whole: a longer text is refused, never cut to a day
        try:
            day = dt.date.fromisoformat(text) if len(text) == 10 else None
        except ValueError:
            day = None
    if day is None:
        problems.append(f"“{shown_value(text)}”")
        day = today
    rooms = []
    for name, default in (("from", 1), ("to", room_count())):
        raw = str(data.get(name, "") or "")
        number = room_number(raw) if raw else default  # the digits 0-9, as on every form
        if number is None:
            problems.append(f"“{shown_value(raw)}”")
            number = default
        rooms.append(number)
    first, last = min(rooms), max(rooms)
    return day, first, last, problems


def _posted_day(text: str) -> dt.date | None:
    """The desk's day a hand-over form was on (YYYY-MM-DD, whole); None (today) if unreadable:
    the function refuses a day that is not due now."""
    try:
        return dt.date.fromisoformat(text) if len(text) == 10 else None
    except ValueError:
        return None


@require_safe
@staff_required
def desk(request: HttpRequest) -> HttpResponse:
    """The desk for a day and a range of rooms (GET: day, from, to)."""
    day, first, last, problems = _desk_query(request.GET)
    client = get_store()
    read = desk_read(client=client, day=day, first_room=first, last_room=last, now=local_now())
    names = names_of(client=client, ids=[row.booking.owner_id for row in read.rows])
    context = {
        "desk": read,
        "names": names,
        "problems": problems,
        "today": local_now().date(),
        "first_label": f"{first:03d}",
        "last_label": f"{last:03d}",
        "request_id": request_id_new(),
        "note_max": HANDOVER_NOTE_MAX,
        "section": "desk",
        "counts_only": request.GET.get("part") == "counts",
    }
    if context["counts_only"]:
        return render_page(request, "_desk_counts.html", context)
    return render_page(request, "desk.html", context)


@form_action("pickup")
@require_POST
@staff_required
def desk_handover(request: HttpRequest) -> HttpResponse:
    """Hand a booking over without its code (the desk's day: today, or yesterday while its
    grace runs); back to the desk as it was. A note longer than the form allows is refused
    (nothing handed over), never cut short."""
    note = " ".join(request.POST.get("note", "").split())
    if len(note) > HANDOVER_NOTE_MAX:
        messages.error(
            request,
            _("Not handed over: the note is longer than %(n)s characters.")
            % {"n": HANDOVER_NOTE_MAX},
        )
    else:
        result = booking_handover(
            client=get_store(),
            booking_id=request.POST.get("booking_id", "")[:80],
            actor_id=str(signed_in_person(request).id),
            note=note,
            request_id=request.POST.get("request_id") or None,
            day=_posted_day(request.POST.get("day", "")),
        )
        (messages.success if result.ok else messages.error)(request, str(result.message))
    back = {k: request.POST.get(k, "")[:10] for k in ("day", "from", "to")}
    query = urlencode({k: v for k, v in back.items() if v})
    return HttpResponseRedirect(f"{reverse('dashboard:desk')}{'?' + query if query else ''}")
