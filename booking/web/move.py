"""Moving one of the buyer's bookings to other slots of its class (any room)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.access import login_required
from booking.domain.parser import InvalidRequest
from booking.engine.moves import booking_move, move_form_values, move_request_posted
from booking.web.owner import own_booking, signed_in_owner
from strongroom.store import get_store


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
def booking_move_page(request: HttpRequest, booking_id: str) -> HttpResponse:
    """GET: the booking and a form of its slots. POST: move it there, or say why not (the
    booking unchanged)."""
    booking = own_booking(request, booking_id)
    posted = request.POST if request.method == "POST" else None
    context = {
        "booking": booking,
        "action": reverse("booking:move", args=[booking.id]),
        "back": reverse("booking:mine"),
        **move_form_values(booking, posted),
    }
    if posted is None:
        return render(request, "booking/move.html", context)
    try:
        wanted = move_request_posted(booking=booking, posted=posted)
        result = booking_move(
            client=get_store(),
            booking_id=booking.id,
            request=wanted,
            actor_id=signed_in_owner(request),
            actor_is_staff=False,
            move_id=posted.get("move_id") or None,
        )
    except InvalidRequest as refused:  # as read, or at the call: midnight passed in between
        context.update(errors=refused.errors)
        return render(request, "booking/move.html", context, status=400)
    if result.ok and result.booking is not None:
        messages.success(request, result.message)
        return HttpResponseRedirect(reverse("booking:done", args=[result.booking.id]))
    context.update(errors=[result.message], taken=result.taken)
    return render(request, "booking/move.html", context, status=409)
