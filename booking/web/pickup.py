"""The pickup kiosk: open the safe with the booking's code."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import formats
from django.views.decorators.http import require_http_methods

from accounts.access import request_client
from booking.domain.rules import local_now, request_id_new
from booking.engine.pickup import booking_pickup
from strongroom.store import get_store


@require_http_methods(["GET", "HEAD", "POST"])
def pickup_kiosk(request: HttpRequest) -> HttpResponse:
    """The kiosk at the safe: room + code opens the safe, or says why not."""
    now = local_now()
    # DATETIME_FORMAT ends in "p.m." in English, and the sentence adds its own full stop.
    kiosk_time = f"{formats.date_format(now, 'DATE_FORMAT')} {formats.time_format(now, 'H:i')}"
    context: dict[str, Any] = {"room": "", "kiosk_time": kiosk_time, "attempt": request_id_new()}
    if request.method == "POST":
        # Whole, as typed: booking_pickup refuses a room or code too long to be one.
        room = request.POST.get("room", "")
        code = request.POST.get("code", "")
        # The form's attempt id: a double press of "Open" neither counts a wrong code twice
        # nor tells the person who just opened the safe that it was "already collected".
        result = booking_pickup(
            client=get_store(),
            room=room,
            code=code,
            attempt_id=request.POST.get("attempt") or None,
            client_id=request_client(request),
        )
        context.update(room=room if len(room) <= 8 else "", result=result)
        if result.come_on is not None and result.booking is not None:
            # When to come back, and nothing else of the booking: whoever typed the code may
            # not be its owner.
            context["come_on"] = result.come_on
            context["come_hours"] = result.booking.hours
        if result.retry_after:
            response = render(request, "booking/pickup.html", context, status=429)
            response["Retry-After"] = str(result.retry_after)
            return response
    return render(request, "booking/pickup.html", context)
