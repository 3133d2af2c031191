"""Moving one of the buyer's bookings to other slots of its class (same room)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.access import login_required
from booking.domain.parser import InvalidRequest
from booking.domain.records import Booking
from booking.domain.rules import request_id_new
from booking.engine.moves import booking_move, move_request
from booking.web.owner import own_booking, signed_in_owner
from strongroom.store import get_store


def move_form_context(
    request: HttpRequest, booking: Booking, *, action: str, back: str
) -> dict[str, Any]:
    """What templates/booking/_move_form.html shows: the booking's slots, or what was posted
    (a refused move keeps the buyer's choice)."""
    posted = request.method == "POST"
    data = request.POST
    dates = data.getlist("date")[:64] if posted else [d.isoformat() for d in booking.dates]
    start, end = booking.hours or (0, 0)
    boxes = ", ".join(str(b) for b in booking.boxes)
    return {
        "booking": booking,
        "move_id": data.get("move_id", "")[:64] if posted else request_id_new(),
        "action": action,
        "back": back,
        "form_dates": dates,
        "form_start": data.get("hour_start", "")[:5] if posted else str(start),
        "form_end": data.get("hour_end", "")[:5] if posted else str(end),
        "form_boxes": data.get("boxes", "")[:400] if posted else boxes,
        "starts": [str(h) for h in range(24)],
        "ends": [str(h) for h in range(1, 25)],
    }


@require_http_methods(["GET", "POST"])
@login_required
def booking_move_page(request: HttpRequest, booking_id: str) -> HttpResponse:
    """GET: the booking and a form of its slots. POST: move it there, or say why not (the
    booking unchanged)."""
    booking = own_booking(request, booking_id)
    context = move_form_context(
        request,
        booking,
        action=reverse("booking:move", args=[booking.id]),
        back=reverse("booking:mine"),
    )
    if request.method == "GET":
        return render(request, "booking/move.html", context)
    data = request.POST
    try:
        wanted = move_request(
            booking=booking,
            dates=data.getlist("date"),
            hour_start=data.get("hour_start"),
            hour_end=data.get("hour_end"),
            boxes=data.get("boxes", "")[:400],
        )
    except InvalidRequest as refused:
        context.update(errors=refused.errors)
        return render(request, "booking/move.html", context, status=400)
    result = booking_move(
        client=get_store(),
        booking_id=booking.id,
        request=wanted,
        actor_id=signed_in_owner(request),
        actor_is_staff=False,
        move_id=data.get("move_id") or None,
    )
    if result.ok:
        messages.success(request, result.message)
        return HttpResponseRedirect(reverse("booking:done", args=[booking.id]))
    context.update(errors=[result.message], taken=result.taken)
    return render(request, "booking/move.html", context, status=409)
