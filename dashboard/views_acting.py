"""Staff acting for a buyer: moving any booking (the buyer's own rules and atomicity), sending a
receipt again, and booking for an existing buyer through the same claim function."""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from accounts.access import signed_in_person, staff_required
from accounts.selectors import account_get
from booking.domain.parser import InvalidRequest, slot_request_parse
from booking.domain.records import Slot
from booking.domain.rules import request_id_new, request_id_valid
from booking.selectors import booking_get, move_form_values
from booking.services import booking_book_for, booking_move, move_request_posted, receipt_resend
from dashboard.pages import not_found, person_context, render_page
from strongroom.middleware import form_action
from strongroom.store import get_store


@require_http_methods(["GET", "HEAD", "POST"])
@staff_required
def booking_move_staff(request: HttpRequest, booking_id: str) -> HttpResponse:
    """Move a booking for its buyer: the same function, rules and mail as the buyer's own."""
    booking = booking_get(client=get_store(), booking_id=booking_id)
    if booking is None:
        return not_found(request, _("There is no booking with this id."))
    posted = request.POST if request.method == "POST" else None
    context = {
        "booking": booking,
        "action": reverse("dashboard:booking_move", args=[booking.id]),
        "back": reverse("dashboard:booking", args=[booking.id]),
        "section": "bookings",
        **move_form_values(booking, posted),
    }
    if posted is None:
        return render_page(request, "booking_move.html", context)
    try:
        wanted = move_request_posted(booking=booking, posted=posted)
        result = booking_move(
            client=get_store(),
            booking_id=booking.id,
            request=wanted,
            actor_id=str(signed_in_person(request).id),
            actor_is_staff=True,
            move_id=posted.get("move_id") or None,
        )
    except InvalidRequest as refused:  # as read, or at the call: midnight passed in between
        context.update(errors=refused.errors)
        return render_page(request, "booking_move.html", context, status=400)
    if result.ok and result.booking is not None:
        messages.success(request, str(result.message))
        return HttpResponseRedirect(reverse("dashboard:booking", args=[result.booking.id]))
    context.update(errors=[result.message], taken=result.taken)
    return render_page(request, "booking_move.html", context, status=409)


@require_POST
@staff_required
def booking_receipt_staff(request: HttpRequest, booking_id: str) -> HttpResponse:
    """Send the buyer the receipt again (code and calendar file, in their language); the
    form's request id makes a double press one mail. A buyer without a confirmed address is
    said to get nothing now (the receipt goes out once they confirm one)."""
    sent = receipt_resend(
        client=get_store(),
        booking_id=booking_id,
        actor_id=str(signed_in_person(request).id),
        request_id=request.POST.get("request_id", "")[:64] or None,
    )
    if sent is None:
        return not_found(request, _("There is no confirmed booking with this id."))
    if sent.sent:
        messages.success(request, _("The receipt is on its way to the buyer again."))
    else:
        messages.warning(
            request,
            _(
                "The receipt cannot be sent: the buyer has no confirmed email address. It goes "
                "out once they confirm one; the pickup code is under My bookings."
            ),
        )
    return HttpResponseRedirect(reverse("dashboard:booking", args=[sent.booking.id]))


@form_action("booking")
@require_POST
@staff_required
def person_book_staff(request: HttpRequest, person_id: int) -> HttpResponse:
    """Book for an existing buyer (one who phones): the buyer's own claim function and rules;
    the buyer gets the receipt with the code. The form's request id makes a double press book
    once."""
    client = get_store()
    target = account_get(client=client, person_id=person_id)
    if target is None:
        return not_found(request, _("There is no person with this id."))
    data = request.POST
    token = data.get("request_id", "")[:64]
    if not request_id_valid(token):
        token = request_id_new()
    if any(
        len(data.getlist(name)) > 1 for name in ("cls", "room", "hour_start", "hour_end", "boxes")
    ):
        # Not the last of them quietly: the form has one of each.
        twice = _("The form sent a class, room, hour or box list twice: nothing was booked.")
        return _book_for_refused(request, person_id, [twice], status=400)
    try:
        wanted = slot_request_parse(
            cls=data.get("cls", ""),
            room=data.get("room", ""),
            dates=[d for d in data.getlist("date") if d.strip()],
            hour_start=data.get("hour_start") or None,
            hour_end=data.get("hour_end") or None,
            boxes=[b.strip() for b in data.get("boxes", "").split(",") if b.strip()] or None,
        )
    except InvalidRequest as refused:
        return _book_for_refused(request, person_id, refused.errors, status=400)
    result = booking_book_for(
        client=client,
        owner_id=str(person_id),
        request=wanted,
        token=token,
        actor_id=str(signed_in_person(request).id),
        owner_name=target.username,
    )
    if not result.ok or result.booking is None:
        if result.gone:
            why = _("Not booked: this buyer's account is being deleted.")
        elif result.closed:
            why = _("Not booked: closed by staff: %(reason)s") % {"reason": result.closed}
        elif result.waited:
            why = _(
                "Not booked: a hold on these slots has just run out, and the waiting list has "
                "them first, for a few minutes."
            )
        else:
            why = _("Not booked: some of these slots are not free.")
        return _book_for_refused(request, person_id, [why], taken=result.taken, status=409)
    named = {"reference": result.booking.reference, "name": target.username}
    if target.email and target.email_verified:
        done = _("Booked %(reference)s for %(name)s; the receipt with the code is on its way.")
    else:  # the receipt is owed until they confirm an address (staff never see a code)
        done = _(
            "Booked %(reference)s for %(name)s, who has no confirmed email address: the "
            "receipt goes out once they confirm one; the pickup code is under My bookings."
        )
    messages.success(request, done % named)
    return HttpResponseRedirect(reverse("dashboard:booking", args=[result.booking.id]))


def _book_for_refused(
    request: HttpRequest,
    person_id: int,
    errors: Sequence[object],
    *,
    taken: Sequence[Slot] = (),
    status: int,
) -> HttpResponse:
    """The person page again with the book-for form as it was sent, why it was refused and
    what was not free (nothing was booked)."""
    context = person_context(request, person_id)
    if context is None:
        return not_found(request, _("There is no person with this id."))
    data = request.POST
    context["book"] = {
        "cls": data.get("cls", "")[:1],
        "room": data.get("room", "")[:8],
        "date": data.get("date", "")[:10],
        "hour_start": data.get("hour_start", "")[:2],
        "hour_end": data.get("hour_end", "")[:2],
        "boxes": data.get("boxes", "")[:400],
        "errors": errors,
        "taken": taken,
    }
    return render_page(request, "person.html", context, status=status)
