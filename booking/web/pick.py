"""The booking page family (URL names pick, panel, calendar, hold, release, confirm, claim):
pick and book, with a hold while confirming. My bookings: booking/web/mine.py; the pickup
kiosk: booking/web/pickup.py.

Views parse, call one engine function (booking.engine.claims, booking.engine.holds) and render
what booking.web.pick_page builds; booking.web.pick_answers holds the page's context and the
answers to a POST. The booking page's state lives in its URL (?cls=B&room=7&start=8&end=12&
date=...), so it works by plain GET re-renders; htmx only swaps the parts (fragment URLs below)
and pushes the same URL.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import redis
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST, require_safe

from accounts.access import login_required, login_required_back
from booking.domain.parser import InvalidRequest, SlotRequest
from booking.domain.records import Booking, Hold
from booking.domain.rules import (
    IdRefused,
    booking_id_from,
    booking_id_room,
    hold_new_id,
)
from booking.domain.site_time import zone_name
from booking.engine.bookings import booking_get, hold_current, hold_get
from booking.engine.claims import booking_claim
from booking.engine.holds import booking_hold, booking_hold_release
from booking.engine.priority import priority_pending
from booking.engine.waits import waits_of
from booking.web import forms, pick_answers, pick_panel
from booking.web.banner import SHOWN_HOLD, priority_granted, speculation_refused, speculative
from booking.web.owner import request_owner, signed_in_owner
from booking.web.pick_answers import HOLD_BOOKED_SESSION_KEY, HOLD_SESSION_KEY
from strongroom.ahead import Command, reads_ahead
from strongroom.compression import compressible
from strongroom.middleware import REFRESH_HEADER, form_action
from strongroom.store import get_store


def _choices_or_redirect(
    request: HttpRequest,
) -> tuple[forms.Choices, list[Any], forms.Choices | None]:
    choices, problems = forms.query_choices(request)
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
    choices, _problems = forms.query_choices(request)
    return pick_panel.panel_reads(choices, with_choice=False)


# Where the page a pressed button leads to opens, without JavaScript (the whole page is loaded
# again): at the picker the button was in, not at the top (a phone's box grid is screens down).
_PRESSED_IN = (("pick_box", "pick-boxes"), ("hour", "pick-hours"), ("toggle", "pick-dates"))


def _pressed_in(data: Mapping[str, Any]) -> str:
    return next((f"#{picker}" for name, picker in _PRESSED_IN if name in data), "")


@require_safe
@reads_ahead(_panel_reads)
def booking_pick(request: HttpRequest) -> HttpResponse:
    """The booking page: pickers, calendar, summary. A pressed button (day, hour, box) comes
    back as a redirect to the page's clean URL, at the picker it was pressed in."""
    choices, problems, changed = _choices_or_redirect(request)
    if changed is not None and not problems:
        return HttpResponseRedirect(pick_answers.page_url(changed) + _pressed_in(request.GET))
    problems += forms.month_refused(request.GET)  # the calendar shows another month
    return render(
        request,
        "booking/book.html",
        pick_answers.page_context(request, changed or choices, problems),
    )


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
        return render(
            request, template, pick_answers.page_context(request, choices, problems, panel=panel)
        )
    response = render(request, template, pick_answers.page_context(request, choices, problems))
    response["HX-Push-Url"] = pick_answers.page_url(choices)
    return response


@require_safe
@reads_ahead(_panel_reads)
def booking_panel(request: HttpRequest) -> HttpResponse:
    """Fragment: the pickers, calendar and summary (htmx swaps it after any picker change)."""
    return _fragment(request, "booking/_panel.html")


@compressible
@require_safe
@reads_ahead(_month_reads)
def booking_calendar(request: HttpRequest) -> HttpResponse:
    """Fragment: the month calendar alone (month navigation)."""
    choices, _problems = forms.query_choices(request)
    month = pick_panel.month_build(
        client=get_store(), choices=choices, owner_id=request_owner(request)
    )
    # The calendar alone is a kept piece: its HTML, rendered once per room edition.
    response = HttpResponse(month.html(choices))
    response["HX-Push-Url"] = pick_answers.page_url(choices)
    return response


_SlotsView = Callable[[HttpRequest, str, forms.Choices, SlotRequest], HttpResponse]


def _posted_choice_page(request: HttpRequest) -> str:
    """The booking page of the choice a form sent (where it was made)."""
    return pick_answers.page_url(forms.choices_from(request.POST)[0])


def _slots_posted(
    view: _SlotsView, *, holds: bool = False
) -> Callable[[HttpRequest], HttpResponse]:
    """A signed-in POST that takes slots (hold, book): `view` gets the owner and the strictly
    read request; bad input gets the booking page again with its messages (400). `holds`: a
    form that names the buyer's own live hold books what the hold keeps, even where the sales
    window no longer reaches (staff moved it since: holds keep their dates whatever the
    window)."""

    @require_POST
    @login_required_back(_posted_choice_page)  # signed out since: back to this very choice
    @functools.wraps(view)
    def checked(request: HttpRequest) -> HttpResponse:
        owner = signed_in_owner(request)
        choices, slot_request, problems = forms.posted_request(request.POST)
        if slot_request is None and holds:
            held = _own_hold(owner, request.POST.get("hold_id", ""))
            if held is not None and _names_hold(request.POST, held):
                return view(request, owner, forms.choices_of(held.request), held.request)
        if slot_request is None:
            return _booked_already(request, owner) or pick_answers.refused(
                request, choices, problems, status=400
            )
        return view(request, owner, choices, slot_request)

    return checked


_CHOICE_FIELDS = ("cls", "room", "box", "start", "end", "date")


def _names_hold(data: Any, held: Hold) -> bool:
    """Whether a form's choice is the hold's own, field for field, as its confirm page sends it
    (anything else sent is read, and refused, as any form is)."""
    own = [(name, value) for name, value in forms.choices_of(held.request).params()]
    sent = [(name, str(value)) for name in _CHOICE_FIELDS for value in data.getlist(name)]
    return sorted(sent) == sorted(own)


def _own_hold(owner: str, hold_id: object) -> Hold | None:
    """The buyer's live hold of this id, or None."""
    if not isinstance(hold_id, str) or booking_id_room(hold_id) is None:
        return None
    held = hold_get(client=get_store(), hold_id=hold_id)
    return held if held is not None and held.owner_id == owner else None


def _booked_already(request: HttpRequest, owner: str) -> HttpResponse | None:
    """A Book press whose form no longer reads (its day became today at midnight) that names
    a booking of this buyer's: the press that made it, sent again. Its booking, not a refusal;
    None for any other form (a hold's, or a booking id of nobody's)."""
    booking_id = request.POST.get("booking_id", "")
    if not isinstance(booking_id, str) or booking_id_room(booking_id) is None:
        return None
    booking = booking_get(client=get_store(), booking_id=booking_id)
    if booking is None or booking.owner_id != owner or booking.status == "cancelled":
        return None
    messages.info(request, _("You have booked these slots already: here is the booking."))
    return HttpResponseRedirect(reverse("booking:done", args=[booking.id]))


def _release_hold(request: HttpRequest, owner: str, hold_id: object) -> None:
    """Give a hold back (a malformed id is ignored) and forget it in the session."""
    if isinstance(hold_id, str) and booking_id_room(hold_id) is not None:
        booking_hold_release(client=get_store(), owner_id=owner, hold_id=hold_id)
    if hold_id and request.session.get(HOLD_SESSION_KEY) == hold_id:
        del request.session[HOLD_SESSION_KEY]


@form_action("booking")
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
        return pick_answers.refused(request, choices, refused.errors, status=400)
    return pick_answers.hold_answer(request, choices, result, hold_id)


@require_GET
@login_required
def hold_confirm(request: HttpRequest, hold_id: str) -> HttpResponse:
    """The held slots, the time left, and the Book button (the booking id is made here)."""
    owner = signed_in_owner(request)
    client = get_store()
    held = hold_get(client=client, hold_id=hold_id) if booking_id_room(hold_id) else None
    if held is not None and held.owner_id == priority_pending(owner):
        if speculative(request):  # a browser's prefetch or prerender grants nothing
            return speculation_refused()
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
        newer = hold_current(client=client, owner_id=owner)
        if newer is not None:  # replaced by the buyer's own newer hold (Hold pressed twice)
            messages.info(request, _("Your newer hold replaced that one: here it is."))
            return HttpResponseRedirect(reverse("booking:confirm", args=[newer.id]))
        again = _("That hold has ended: here is its choice again, as it is now.")
        remembered = request.session.get(pick_answers.HOLD_CHOICE_SESSION_KEY)
        if isinstance(remembered, list) and len(remembered) == 2 and remembered[0] == hold_id:
            messages.warning(request, again)
            return HttpResponseRedirect(f"{reverse('booking:pick')}?{remembered[1]}")
        page, whole = _ended_hold_page(client, owner, hold_id)
        # Another browser than the one that held (its choice is remembered there): the room.
        ended = _("That hold has ended: here is its room, to choose again.")
        messages.warning(request, again if whole else ended)
        return HttpResponseRedirect(page)
    choices = forms.choices_of(held.request)
    setattr(request, SHOWN_HOLD, held.id)  # not in the priority banner too
    context = {
        "hold": held,
        "choices": choices,
        # Named by the hold: Book pressed in two tabs (or twice) is one booking, which the
        # claim recognises as its own, not "someone was faster".
        "booking_id": booking_id_from(f"hold:{held.id}", room=held.request.room),
        "expires_local": timezone.localtime(held.expires_at),
        "seconds_left": max(0, int((held.expires_at - timezone.now()).total_seconds())),
        "zone": zone_name(),
        "page_url": pick_answers.page_url(choices),
    }
    return render(request, "booking/confirm.html", context)


def _ended_hold_page(client: redis.Redis, owner: str, hold_id: str) -> tuple[str, bool]:
    """Where an ended hold's link leads, and whether with its whole choice: the booking page
    with its choice when the hold was the waiting list's (the buyer's notice still names it),
    else with its room."""
    for status in waits_of(client=client, owner_id=owner):
        if status.hold_id == hold_id:
            wait = status.wait
            start, end = wait.hours or (None, None)
            choices = forms.Choices(
                cls=wait.cls, room=wait.room, dates=(wait.date,), start=start, end=end,
                boxes=(wait.box,) if wait.box else (),
            )  # fmt: skip
            return pick_answers.page_url(choices), True
    room = booking_id_room(hold_id)
    page = pick_answers.page_url(forms.Choices(room=room)) if room else reverse("booking:pick")
    return page, False


@require_POST
@login_required
def hold_release(request: HttpRequest) -> HttpResponse:
    """Give the hold back and return to the pickers with the same choices."""
    owner = signed_in_owner(request)
    _release_hold(request, owner, request.POST.get("hold_id", ""))
    choices, _problems = forms.choices_from(request.POST)
    return HttpResponseRedirect(pick_answers.page_url(choices))


@form_action("booking")
@functools.partial(_slots_posted, holds=True)
def booking_submit(
    request: HttpRequest, owner: str, choices: forms.Choices, slot_request: SlotRequest
) -> HttpResponse:
    """Book. The booking id was made with the form, so a second click returns the same booking."""
    hold_id = request.POST.get("hold_id", "")
    try:  # the claim checks the ids (of this room) and the rules again, as the last guard
        result = booking_claim(
            client=get_store(),
            owner_id=owner,
            request=slot_request,
            booking_id=request.POST.get("booking_id", ""),
            hold_id=hold_id or None,
            paced=True,
        )
    except InvalidRequest as refused:  # midnight passed since the form was read
        return pick_answers.refused(request, choices, refused.errors, status=400)
    except IdRefused:  # an id not of this room, or not of this buyer
        return pick_answers.out_of_date(request, choices)
    made = result.booking
    if made is not None and _slots_of(made) != _slots_of(slot_request):
        # The form's id named a booking made before (a resent form, changed since): that
        # booking, as it stands, and a word that what the form now asks was not booked.
        messages.info(
            request,
            _(
                "This form's booking was made already: here it is as it stands. What the "
                "form asked for this time was not booked."
            ),
        )
    return pick_answers.claim_answer(request, choices, result, hold_id)


def _slots_of(booked: Booking | SlotRequest) -> tuple[object, ...]:
    return (booked.cls, booked.room, booked.dates, booked.hours, tuple(booked.boxes))
