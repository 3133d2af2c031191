"""The staff dashboard's booking pages: the filtered list, its CSV/iCalendar exports, one
booking and its cancellation."""

from __future__ import annotations

import redis
from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from accounts.access import signed_in_person, staff_required
from accounts.selectors import person_id_find
from booking.domain.references import booking_id_by_reference
from booking.domain.refusals import shown_value
from booking.domain.rules import booking_id_room, request_id_new
from booking.selectors import booking_get
from booking.services import booking_cancel
from dashboard import exports
from dashboard.forms import (
    BookingFilterForm,
    CancelForm,
)
from dashboard.pages import log_rows, not_found, render_page
from dashboard.selectors import (
    FilteredBookings,
    booking_trail,
    bookings_filtered,
    names_of,
)
from strongroom.middleware import form_action
from strongroom.store import get_store

# --- bookings ----------------------------------------------------------------------------------


def _filtered(
    request: HttpRequest, *, say: bool = True
) -> tuple[BookingFilterForm, FilteredBookings | None]:
    """The filter and its bookings (None when the filter is refused). A name nobody has finds
    nothing, said on the page (`say`); an export says it in its own answer instead."""
    form = BookingFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid():
        return form, None
    if not form.is_bound:
        form = BookingFilterForm({})
        form.is_valid()
    owner_id = None
    name = form.cleaned_data.get("person")
    client = get_store()
    if name:
        found_id = person_id_find(client=client, username=name)
        if found_id is None:
            if say:
                messages.warning(request, _("Nobody is called “%(name)s”.") % {"name": name})
            return form, FilteredBookings([], False, unknown_name=name)
        owner_id = str(found_id)
    return form, bookings_filtered(client=client, wanted=form.booking_filter(owner_id))


@require_safe
@staff_required
def bookings(request: HttpRequest) -> HttpResponse:
    """The bookings of a date range (the composite-score index), filtered and paged."""
    form, found = _filtered(request)
    page = None
    if found is None:
        messages.error(request, _("Check the highlighted fields of the filter."))
    else:
        paginator = Paginator(found.bookings, settings.STRONGROOM_DASHBOARD_PAGE_SIZE)
        raw = request.GET.get("page", "1")
        wanted = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 9 else 0
        if wanted > paginator.num_pages or wanted < 1:
            messages.warning(
                request,
                _("There is no page %(page)s; showing page %(shown)s.")
                % {"page": shown_value(raw), "shown": paginator.num_pages if wanted else 1},
            )
        page = paginator.get_page(wanted or 1)
        if found.truncated:
            messages.warning(
                request, _("Only the first bookings of this range were read; narrow the filter.")
            )
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "form": form,
        "found": found,
        "page": page,
        "query": query.urlencode(),
        "section": "bookings",
    }
    return render_page(request, "bookings.html", context)


def _export(request: HttpRequest, kind: str) -> HttpResponse:
    form, found = _filtered(request, say=False)
    if found is None or found.unknown_name:
        # Refused in this answer, the filter's page: nothing is left queued for a later page.
        if found is None:
            messages.error(request, _("Check the highlighted fields of the filter."))
        else:
            messages.warning(
                request, _("Nobody is called “%(name)s”.") % {"name": found.unknown_name}
            )
        context = {"form": form, "found": None, "section": "bookings"}
        return render_page(request, "bookings.html", context, status=400)
    stamp = timezone.localtime().strftime("%Y%m%d-%H%M")
    if kind == "csv":
        body: str | bytes = exports.bookings_csv(found.bookings, found.names)
        response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    else:
        body = exports.bookings_ics(found.bookings, found.names, host="strongroom")
        response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="bookings-{stamp}.{kind}"'
    return response


@require_safe
@staff_required
def bookings_csv(request: HttpRequest) -> HttpResponse:
    """The current filter as CSV (every matching booking, not just one page)."""
    return _export(request, "csv")


@require_safe
@staff_required
def bookings_ics(request: HttpRequest) -> HttpResponse:
    """The current filter as an iCalendar file, one event per booked day."""
    return _export(request, "ics")


@require_safe
@staff_required
def booking_detail(request: HttpRequest, booking_id: str) -> HttpResponse:
    """One booking with its audit trail and the cancel form. A reference in the address
    (B-NCA6-55KF, as buyers read it out) is sent on to the booking's own address."""
    if booking_id_room(booking_id) is None:
        found = booking_id_by_reference(client=get_store(), reference=booking_id[:40])
        if found is not None:
            return HttpResponseRedirect(
                reverse("dashboard:booking", args=[_current_id(get_store(), found)])
            )
    return _booking_page(request, booking_id, CancelForm())


@require_safe
@staff_required
def booking_find(request: HttpRequest) -> HttpResponse:
    """Staff type a reference a buyer reads out (any case, with or without dashes), or paste a
    booking's id (as the site's own addresses show it)."""
    typed = request.GET.get("ref", "")
    client = get_store()
    booking_id = booking_id_by_reference(client=client, reference=typed[:40])
    if booking_id is not None:
        booking_id = _current_id(client, booking_id)
    pasted = typed.strip()
    if booking_id is None and booking_id_room(pasted) is not None:
        found = booking_get(client=client, booking_id=pasted)
        booking_id = found.id if found is not None else None
    if booking_id is None:
        messages.warning(
            request, _("No booking has the reference “%(ref)s”.") % {"ref": shown_value(pasted)}
        )
        return HttpResponseRedirect(reverse("dashboard:bookings"))
    return HttpResponseRedirect(reverse("dashboard:booking", args=[booking_id]))


def _current_id(client: redis.Redis, booking_id: str) -> str:
    """The id a booking has now: a reference names the room it was made in, and a booking
    moved to another room lives on under a new id there (its old address would only send
    staff on)."""
    booking = booking_get(client=client, booking_id=booking_id)
    return booking.id if booking is not None else booking_id


def _booking_page(
    request: HttpRequest, booking_id: str, form: CancelForm, status: int = 200
) -> HttpResponse:
    client = get_store()
    booking = booking_get(client=client, booking_id=booking_id)
    if booking is None:
        return not_found(request, _("There is no booking with this id."))
    trail = booking_trail(client=client, booking=booking)
    names = names_of(
        client=client, ids=[booking.owner_id, booking.cancelled_by, *(e.actor for e in trail)]
    )
    context = {
        "booking": booking,
        "trail_rows": log_rows(trail, client=client, known={booking.id: booking.reference}),
        "names": names,
        "form": form,
        "section": "bookings",
        "request_id": request_id_new(),
    }
    return render_page(request, "booking_detail.html", context, status=status)


@form_action("cancel")
@require_POST
@staff_required
def booking_cancel_staff(request: HttpRequest, booking_id: str) -> HttpResponse:
    """Cancel a booking as staff, with a reason the buyer sees (mail, My bookings) as does the
    audit log."""
    if booking_id_room(booking_id) is None:
        return not_found(request, _("There is no booking with this id."))
    form = CancelForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("The booking was not cancelled."))
        return _booking_page(request, booking_id, form, status=400)
    result = booking_cancel(
        client=get_store(),
        booking_id=booking_id,
        actor_id=str(signed_in_person(request).id),
        actor_is_staff=True,
        reason=form.cleaned_data["reason"],
        # The form's: a double click reports "cancelled" twice, not "already cancelled".
        request_id=request.POST.get("request_id"),
    )
    if result.outcome == "not_found":
        return not_found(request, _("There is no booking with this id."))
    (messages.success if result.ok else messages.error)(request, str(result.message))
    return HttpResponseRedirect(reverse("dashboard:booking", args=[booking_id]))


# --- people ------------------------------------------------------------------------------------
