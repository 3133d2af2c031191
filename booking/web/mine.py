"""A buyer's bookings after the booking: the done page, My bookings (paged), cancelling."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.messages.storage.base import BaseStorage
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.access import login_required
from booking.domain.codes import code_display
from booking.domain.records import Booking
from booking.domain.rules import local_now, request_id_new
from booking.engine.bookings import bookings_page
from booking.engine.cancel import booking_cancel, cancel_refusal
from booking.engine.pickup import pickup_first_open_day, pickup_still_open
from booking.engine.unsure import booking_settle
from booking.engine.waits import waits_of
from booking.web.owner import own_booking, signed_in_owner
from strongroom.middleware import form_action
from strongroom.store import get_store

MINE_PAGE_SIZE = 20


def _shown(booking: Booking, now: dt.datetime) -> dict[str, Any]:
    # Due until its last pickup window ends, not its last day: after 24:00 the grace runs on
    # into the next day, and the code still opens the safe then.
    due = booking.status == "confirmed" and pickup_still_open(booking, now=now)
    return {
        "booking": booking,
        "code": "" if booking.unsure or booking.handed else code_display(booking.pickup_code()),
        # Over, and none of its days collected (one partly collected lists its days).
        "missed": booking.status == "confirmed" and not due and not booking.collected_dates,
        "upcoming": due,
        "cancellable": booking.status == "confirmed" and booking.dates[0] > now.date(),
        "created_local": timezone.localtime(booking.created_at),
    }


@require_safe
@login_required
def booking_done(request: HttpRequest, booking_id: str) -> HttpResponse:
    """The confirmation: the booking and its pickup code, large, with the pickup rules."""
    booking = own_booking(request, booking_id)
    shown = _shown(booking, local_now())
    context = {
        **shown,
        # Confirmed, with its code to pick up: the heading says "Booked", and so does the tab.
        "booked": booking.status == "confirmed" and bool(shown["code"]) and not shown["missed"],
        "grace": settings.STRONGROOM_PICKUP_GRACE_MINUTES,
        "delay_ceiling": settings.STRONGROOM_PICKUP_DELAY_CEILING_SECONDS,
    }
    return render(request, "booking/done.html", context)


@form_action("booking")
@require_POST
@login_required
def booking_settle_page(request: HttpRequest, booking_id: str) -> HttpResponse:
    """ "Confirm it now", for a booking the store could not confirm when it was made: one
    durable write; saved, the done page shows its code; still not, the site's 503 page offers
    the button again (NotDurable reaches `strongroom.middleware`)."""
    booking = own_booking(request, booking_id)
    if booking.unsure:
        if not booking_settle(client=get_store(), booking_id=booking.id):
            # Read a moment ago, gone now: the store lost it (a failover before it was safe).
            lost = _("The store lost this booking before it was saved: please book again.")
            messages.error(request, lost)
            return HttpResponseRedirect(reverse("booking:mine"))
        messages.success(request, _("Confirmed: your booking is saved."))
    return HttpResponseRedirect(reverse("booking:done", args=[booking.id]))


@require_safe
@login_required
def bookings_mine(request: HttpRequest) -> HttpResponse:
    """My bookings, MINE_PAGE_SIZE a page (?page=2...): upcoming first, the live ones before
    the cancelled ones (the soonest to end first across pages; on a page, by the next pickup),
    then the earlier ones (newest first); every booking is on some page."""
    owner = signed_in_owner(request)
    now = local_now()
    today = now.date()
    raw = request.GET.get("page", "1")
    number = int(raw) if raw.isascii() and raw.isdigit() and 0 < len(raw) < 6 else 1
    number = max(1, number)
    found = bookings_page(
        client=get_store(),
        owner_id=owner,
        # From the last day whose pickup may still be open (yesterday's, in the grace).
        today=pickup_first_open_day(now),
        limit=MINE_PAGE_SIZE,
        offset=(number - 1) * MINE_PAGE_SIZE,
    )
    rows = [_shown(b, now) for b in found.bookings]
    # The page's upcoming bookings by their next pickup (the index orders them by last day).
    upcoming = sorted(
        (r for r in rows if r["upcoming"]), key=lambda r: r["booking"].soonest_key(today)
    )
    pages_total = max(1, -(-found.total // MINE_PAGE_SIZE))
    context = {
        "upcoming": upcoming,
        "others": [r for r in rows if not r["upcoming"]],
        "page": number,
        "pages_total": pages_total,
        "previous_page": min(number - 1, pages_total) if number > 1 else None,
        "past_last": number > pages_total,
        "next_page": number + 1 if found.has_next else None,
        "total": found.total,
        "waits": waits_of(client=get_store(), owner_id=owner),
        "now": timezone.now(),
    }
    return render(request, "booking/mine.html", context)


@form_action("cancel")
@require_http_methods(["GET", "HEAD", "POST"])
@login_required
def booking_cancel_page(request: HttpRequest, booking_id: str) -> HttpResponse:
    """GET: are you sure? POST: cancel (the engine refuses on or after the first day)."""
    booking = own_booking(request, booking_id)
    if request.method != "POST":  # GET, HEAD: nothing is cancelled
        shown = _shown(booking, local_now())
        context = {
            **shown,
            "request_id": request_id_new(),
            "refusal": None if shown["cancellable"] else cancel_refusal(booking),
        }
        return render(request, "booking/cancel.html", context)
    owner = signed_in_owner(request)
    # The form's request id: a double click on "Yes, cancel" reports success twice.
    result = booking_cancel(
        client=get_store(),
        booking_id=booking.id,
        actor_id=owner,
        actor_is_staff=False,
        request_id=request.POST.get("request_id") or None,
    )
    # A double click's second answer comes before the next page: its message is said once.
    if result.message not in _messages_waiting(request):
        messages.add_message(
            request, messages.SUCCESS if result.ok else messages.ERROR, result.message
        )
    return HttpResponseRedirect(reverse("booking:mine"))


def _messages_waiting(request: HttpRequest) -> set[str]:
    """The texts of the messages not shown yet (they stay waiting: read, not used up)."""
    storage = messages.get_messages(request)
    waiting = {str(message.message) for message in storage}
    if isinstance(storage, BaseStorage):
        storage.used = False
    return waiting
