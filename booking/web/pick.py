"""The booking page family (URL names pick, panel, calendar, hold, release, confirm, claim):
pick and book, with a hold while confirming. My bookings: booking/web/mine.py; the pickup
kiosk: booking/web/pickup.py.

Views parse, call one engine function (booking.engine.claims, booking.engine.holds) and render
what booking.web.pick_page builds. The booking page's state lives in its URL
(?cls=B&room=7&start=8&end=12&date=...), so it works by plain GET re-renders; htmx only swaps
the parts (fragment URLs below) and pushes the same URL.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST

from accounts.access import login_required
from booking.domain.parser import InvalidRequest, SlotRequest
from booking.domain.records import Slot
from booking.domain.rules import (
    booking_id_from,
    booking_id_room,
    hold_new_id,
    season_end,
    season_start,
)
from booking.domain.site_time import hour_range, zone_name
from booking.engine.bookings import hold_get
from booking.engine.claims import booking_claim
from booking.engine.holds import booking_hold, booking_hold_release
from booking.engine.priority import priority_pending
from booking.web import forms, pick_alternatives, pick_page, pick_panel, taken_words
from booking.web.banner import priority_granted
from booking.web.owner import request_owner, signed_in_owner
from strongroom.ahead import Command, read_together, reads_ahead
from strongroom.clock import minute_up
from strongroom.compression import compressible
from strongroom.middleware import REFRESH_HEADER, is_fragment
from strongroom.store import get_store

HOLD_SESSION_KEY = "booking_hold_id"
# The hold last turned into a booking, and that booking: Back to its confirm page leads to it.
HOLD_BOOKED_SESSION_KEY = "booking_hold_booked"


def _page_url(choices: forms.Choices) -> str:
    query = choices.query()
    return reverse("booking:pick") + (f"?{query}" if query else "")


def _context(
    request: HttpRequest,
    choices: forms.Choices,
    problems: list[Any],
    *,
    taken: tuple[Slot, ...] | list[Slot] = (),
    panel: pick_panel.Panel | None = None,
    alternatives_now: bool = True,
    strictly_read: bool = False,
) -> dict[str, Any]:
    client, owner = get_store(), request_owner(request)
    if panel is None:
        panel = pick_panel.panel_build(client=client, choices=choices, owner_id=owner)
    # A posted request the parser read strictly a moment ago is not read again.
    complete = choices.complete and not strictly_read
    complete_errors = forms.request_errors(choices) if complete else []
    # A complete choice that is not free: name its sold and held slots and offer the nearest
    # free ones (one more read, only then), never a "Hold" button for what is shown as taken.
    # A refused POST (`alternatives_now=False`) links to them instead: most answers of a
    # contended slot are refusals, and the neighbouring rooms are read only if asked for.
    alternatives: list[pick_alternatives.Suggestion] = []
    offer_alternatives = bool(panel.blocked) and not complete_errors
    if offer_alternatives and alternatives_now:
        alternatives = pick_alternatives.alternatives_build(
            client=client, choices=choices, owner_id=owner
        )
    later = _page_url(choices) if offer_alternatives and not alternatives_now else ""
    return {
        "choices": choices,
        "problems": problems,
        "taken": [] if panel.blocked else taken_words.slots_described(taken),
        "blocked": taken_words.blocked_described(panel.blocked),
        "alternatives": alternatives,
        "alternatives_url": later,
        "stamp": panel.stamp,
        "taken_meanwhile": bool(panel.blocked) and request.GET.get("was") == "free",
        "refresh_seconds": pick_page.REFRESH_SECONDS,
        "hours_text": hour_range(*choices.hours) if choices.hours else "",
        "map_url": pick_page.map_url(choices),
        "pickers_html": panel.pickers_html(choices, signed_in=request.user.is_authenticated),
        "complete_errors": complete_errors,
        "page_url": _page_url(choices),
        "wait_url": reverse("booking:wait") + f"?{choices.query()}",
        "hold_minutes": max(1, settings.STRONGROOM_HOLD_SECONDS // 60),
        "season_start": season_start(),
        "season_end": season_end(),
    }


def _choices_or_redirect(
    request: HttpRequest,
) -> tuple[forms.Choices, list[Any], forms.Choices | None]:
    choices, problems = forms.choices_from(request.GET)
    return choices, problems, forms.choices_changed(choices, request.GET)


def _panel_reads(request: HttpRequest) -> list[Command]:
    """The room's read of the booking page and its panel, planned from the query alone (none
    for a pressed button, which redirects)."""
    choices, problems, changed = _choices_or_redirect(request)
    if changed is not None and not problems:
        return []
    return pick_panel.panel_reads(changed or choices)


def _month_reads(request: HttpRequest) -> list[Command]:
    """The room's read of the calendar fragment (the month's days, no chosen ones)."""
    choices, _problems = forms.choices_from(request.GET)
    return pick_panel.panel_reads(choices, with_choice=False)


@require_GET
@reads_ahead(_panel_reads)
def booking_pick(request: HttpRequest) -> HttpResponse:
    """The booking page: pickers, calendar, summary. A pressed button (day, hour, box) comes
    back as a redirect to the page's clean URL."""
    choices, problems, changed = _choices_or_redirect(request)
    if changed is not None and not problems:
        return HttpResponseRedirect(_page_url(changed))
    return render(request, "booking/book.html", _context(request, changed or choices, problems))


def _fragment(request: HttpRequest, template: str) -> HttpResponse:
    choices, problems, changed = _choices_or_redirect(request)
    choices = changed or choices
    if request.headers.get(REFRESH_HEADER):
        # The open page refreshing itself: nothing new (the digest of what it shows is the
        # same) is an empty 204 that htmx leaves alone; the address bar is not touched.
        panel = pick_panel.panel_build(
            client=get_store(), choices=choices, owner_id=request_owner(request)
        )
        if panel.stamp and request.GET.get("seen") == panel.stamp:
            return HttpResponse(status=204)
        return render(request, template, _context(request, choices, problems, panel=panel))
    response = render(request, template, _context(request, choices, problems))
    response["HX-Push-Url"] = _page_url(choices)
    return response


@require_GET
@reads_ahead(_panel_reads)
def booking_panel(request: HttpRequest) -> HttpResponse:
    """Fragment: the pickers, calendar and summary (htmx swaps it after any picker change)."""
    return _fragment(request, "booking/_panel.html")


@compressible
@require_GET
@reads_ahead(_month_reads)
def booking_calendar(request: HttpRequest) -> HttpResponse:
    """Fragment: the month calendar alone (month navigation)."""
    choices, _problems = forms.choices_from(request.GET)
    month = pick_panel.month_build(
        client=get_store(), choices=choices, owner_id=request_owner(request)
    )
    # The calendar alone is a kept piece: its HTML, rendered once per room edition.
    response = HttpResponse(month.html(choices))
    response["HX-Push-Url"] = _page_url(choices)
    return response


def _refused(
    request: HttpRequest,
    choices: forms.Choices,
    problems: list[Any],
    *,
    status: int,
    taken: tuple[Slot, ...] = (),
    strictly_read: bool = False,
) -> HttpResponse:
    """The booking page again, the buyer's choices kept, with why it did not work. A slot
    taken meanwhile (409): the page reads the room only, and links to the nearest free
    alternatives (the booking page reads the neighbouring rooms when that link is followed).
    An htmx request gets the panel alone, swapped in place of the page's."""
    if status == 409:
        read_together(get_store(), pick_panel.panel_reads(choices))
    alternatives_now = status != 409
    context = _context(request, choices, problems, taken=taken,
                       alternatives_now=alternatives_now, strictly_read=strictly_read)  # fmt: skip
    if not is_fragment(request):
        return render(request, "booking/book.html", context, status=status)
    response = render(request, "booking/_panel.html", context, status=status)
    swap = {"HX-Retarget": "#booking-panel", "HX-Reswap": "outerHTML"}
    for name, value in {**swap, "HX-Push-Url": context["page_url"]}.items():
        response[name] = value
    return response


_SlotsView = Callable[[HttpRequest, str, forms.Choices, SlotRequest], HttpResponse]


def _slots_posted(view: _SlotsView) -> Callable[[HttpRequest], HttpResponse]:
    """A signed-in POST that takes slots (hold, book): `view` gets the owner and the strictly
    read request; bad input gets the booking page again with its messages (400)."""

    @require_POST
    @login_required
    @functools.wraps(view)
    def checked(request: HttpRequest) -> HttpResponse:
        owner = signed_in_owner(request)
        choices, slot_request, problems = forms.posted_request(request.POST)
        if slot_request is None:
            return _refused(request, choices, problems, status=400)
        return view(request, owner, choices, slot_request)

    return checked


def _slots_taken(
    request: HttpRequest,
    choices: forms.Choices,
    taken: tuple[Slot, ...],
    *,
    shown_free: bool = True,
) -> HttpResponse:
    """409, the slots are not free: "someone was faster" when the page had shown them free."""
    if shown_free:
        message = _("Someone was faster: these slots are no longer free.")
    else:
        message = _("These slots are not free: choose from what the page shows as free.")
    return _refused(request, choices, [message], status=409, taken=taken, strictly_read=True)


def _paced(request: HttpRequest, choices: forms.Choices, until: dt.datetime) -> HttpResponse:
    """429: the buyer's hourly booking allowance is spent (a hold is refused the same way: it
    would block slots the buyer may not book)."""
    most = settings.STRONGROOM_BOOKINGS_PER_HOUR
    message = ngettext(
        "You have made %(n)s booking in the last hour, the most one account may; you can "
        "book again from %(time)s (%(zone)s time).",
        "You have made %(n)s bookings in the last hour, the most one account may; you can "
        "book again from %(time)s (%(zone)s time).",
        most,
    ) % {
        "n": most,
        "time": timezone.localtime(minute_up(until)).strftime("%H:%M"),
        "zone": zone_name(),
    }
    return _refused(request, choices, [message], status=429, strictly_read=True)


def _gone(request: HttpRequest, choices: forms.Choices) -> HttpResponse:
    """403: the buyer's account is being deleted in another session."""
    message = _("Your account is being deleted: nothing more can be booked for it.")
    return _refused(request, choices, [message], status=403)


def _release_hold(request: HttpRequest, owner: str, hold_id: object) -> None:
    """Give a hold back (a malformed id is ignored) and forget it in the session."""
    if isinstance(hold_id, str) and booking_id_room(hold_id) is not None:
        booking_hold_release(client=get_store(), owner_id=owner, hold_id=hold_id)
    if hold_id and request.session.get(HOLD_SESSION_KEY) == hold_id:
        del request.session[HOLD_SESSION_KEY]


def _closed(request: HttpRequest, choices: forms.Choices, reason: str) -> HttpResponse:
    """A chosen slot is closed by the staff: say so, with their reason (nothing was written)."""
    message = _("Closed: %(reason)s. Choose other days or another room.") % {"reason": reason}
    return _refused(request, choices, [message], status=409, strictly_read=True)


@_slots_posted
def hold_place(
    request: HttpRequest, owner: str, choices: forms.Choices, slot_request: SlotRequest
) -> HttpResponse:
    """Hold the chosen slots for a few minutes, then show them for confirmation."""
    # booking_hold replaces the buyer's previous hold (whatever session placed it).
    hold_id = hold_new_id(room=slot_request.room)
    try:
        result = booking_hold(
            client=get_store(), owner_id=owner, request=slot_request, hold_id=hold_id, paced=True
        )
    except InvalidRequest as refused:  # midnight passed since the form was read
        return _refused(request, choices, refused.errors, status=400)
    if result.paced_until is not None:
        return _paced(request, choices, result.paced_until)
    if result.gone:
        return _gone(request, choices)
    if result.closed:
        return _closed(request, choices, result.closed)
    if result.cooling_until is not None:
        until = timezone.localtime(minute_up(result.cooling_until)).strftime("%H:%M")
        message = _(
            "You held slots in this room for as long as a hold lasts: to be fair to everyone, "
            "you can hold here again from %(time)s. Other rooms you can hold now."
        ) % {"time": until}
        return _refused(request, choices, [message], status=409)
    if not result.ok:
        return _slots_taken(
            request, choices, result.taken, shown_free=request.POST.get("seen") == "free"
        )
    request.session[HOLD_SESSION_KEY] = hold_id
    return HttpResponseRedirect(reverse("booking:confirm", args=[hold_id]))


@require_GET
@login_required
def hold_confirm(request: HttpRequest, hold_id: str) -> HttpResponse:
    """The held slots, the time left, and the Book button (the booking id is made here)."""
    owner = signed_in_owner(request)
    client = get_store()
    held = hold_get(client=client, hold_id=hold_id) if booking_id_room(hold_id) else None
    if held is not None and held.owner_id == priority_pending(owner):
        if not priority_granted(request, client=client, owner=owner, hold_id=hold_id):
            return HttpResponseRedirect(reverse("booking:pick"))
        held = hold_get(client=client, hold_id=hold_id)
    if held is not None and held.owner_id != owner:
        raise Http404
    if held is None:
        booked = request.session.get(HOLD_BOOKED_SESSION_KEY)
        if isinstance(booked, list) and len(booked) == 2 and booked[0] == hold_id:
            messages.info(request, _("You have booked these slots already: here is the booking."))
            return HttpResponseRedirect(reverse("booking:done", args=[booked[1]]))
        messages.warning(
            request, _("That hold has ended (it lasts a few minutes): please choose again.")
        )
        return HttpResponseRedirect(reverse("booking:pick"))
    choices = forms.choices_of(held.request)
    context = {
        "hold": held,
        "choices": choices,
        # Named by the hold: Book pressed in two tabs (or twice) is one booking, which the
        # claim recognises as its own, not "someone was faster".
        "booking_id": booking_id_from(f"hold:{held.id}", room=held.request.room),
        "expires_local": timezone.localtime(held.expires_at),
        "zone": zone_name(),
        "page_url": _page_url(choices),
    }
    return render(request, "booking/confirm.html", context)


@require_POST
@login_required
def hold_release(request: HttpRequest) -> HttpResponse:
    """Give the hold back and return to the pickers with the same choices."""
    owner = signed_in_owner(request)
    _release_hold(request, owner, request.POST.get("hold_id", ""))
    choices, _problems = forms.choices_from(request.POST)
    return HttpResponseRedirect(_page_url(choices))


@_slots_posted
def booking_submit(
    request: HttpRequest, owner: str, choices: forms.Choices, slot_request: SlotRequest
) -> HttpResponse:
    """Book. The booking id was made with the form, so a second click returns the same booking."""
    booking_id = request.POST.get("booking_id", "")
    hold_id = request.POST.get("hold_id", "")
    if booking_id_room(booking_id) != slot_request.room:
        message = _("This form is out of date: check your choices and book again.")
        return _refused(request, choices, [message], status=400)
    if booking_id_room(hold_id) != slot_request.room:
        hold_id = ""
    try:
        result = booking_claim(
            client=get_store(),
            owner_id=owner,
            request=slot_request,
            booking_id=booking_id,
            hold_id=hold_id or None,
            paced=True,
        )
    except InvalidRequest as refused:  # midnight passed since the form was read
        return _refused(request, choices, refused.errors, status=400)
    except ValueError:
        message = _("This form is out of date: check your choices and book again.")
        return _refused(request, choices, [message], status=400)
    if result.paced_until is not None:
        return _paced(request, choices, result.paced_until)
    if result.gone:
        return _gone(request, choices)
    if result.closed:
        return _closed(request, choices, result.closed)
    if not result.ok or result.booking is None:
        return _slots_taken(request, choices, result.taken)
    if hold_id and request.session.get(HOLD_SESSION_KEY) == hold_id:
        del request.session[HOLD_SESSION_KEY]
        request.session[HOLD_BOOKED_SESSION_KEY] = [hold_id, result.booking.id]
    return HttpResponseRedirect(reverse("booking:done", args=[result.booking.id]))
