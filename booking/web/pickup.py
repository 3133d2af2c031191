"""The pickup kiosk: open the safe with the booking's code."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import formats
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from accounts.access import request_client
from booking.domain.records import Booking
from booking.domain.rules import local_now, request_id_new
from booking.engine.pickup import booking_pickup, pickup_still_open, pickup_window
from strongroom.middleware import form_action
from strongroom.store import get_store

# The answers to a right code at the wrong time, which say when to come.
_NOT_NOW = ("wrong_day", "wrong_hour", "already_collected")
# A safe opened this recently for the code just typed may have opened for this very person: a
# press whose answer they never saw (the store slow to confirm), or another tab.
JUST_OPENED = dt.timedelta(minutes=10)


def _clock(minutes: int) -> str:
    """Minutes from a day's midnight as HH:MM; at or past the next midnight, said so."""
    text = f"{minutes // 60 % 24:02d}:{minutes % 60:02d}"
    return _("%(time)s the next day") % {"time": text} if minutes >= 24 * 60 else text


def _come_back(booking: Booking, come_on: dt.date | None, now: dt.datetime) -> dict[str, Any]:
    """What the kiosk says of a booking it did not open: the day to come back on, from when to
    when (its hours, the end with the grace the kiosk gives), and whether today's were missed."""
    said: dict[str, Any] = {"come_on": come_on, "come_today": come_on == now.date()}
    window = pickup_window(booking)
    if window is None:
        return said
    start, end = window
    said.update(come_start=_clock(start), come_end=_clock(end))
    today_over = not pickup_still_open(booking, now=now, day=now.date())
    if today_over and now.date() in booking.dates and now.date() not in booking.collected_dates:
        said["missed_at"] = _clock(end)
    return said


def _opened(booking: Booking, now: dt.datetime) -> dict[str, Any]:
    """When the safe last opened for an "already collected" code: the day (None: today), the
    time, and whether that was just now (it may have been the press of whoever typed it)."""
    at = booking.collected_at
    if at is None or booking.handed:  # handed over at the desk: its own message says so
        return {}
    local = at.astimezone(now.tzinfo)
    return {
        "opened_time": formats.time_format(local, "H:i:s"),
        "opened_day": None if local.date() == now.date() else local.date(),
        "opened_just_now": dt.timedelta(0) <= now - local <= JUST_OPENED,
    }


@form_action("pickup")
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
            now=now,  # the clock the answer and its wording both read
            client_id=request_client(request),
        )
        context.update(room=room if len(room) <= 8 else "", result=result)
        if result.booking is not None and result.outcome in _NOT_NOW:
            # When to come back, and nothing else of the booking: whoever typed the code may
            # not be its owner.
            context.update(_come_back(result.booking, result.come_on, now))
        if result.booking is not None and result.outcome == "already_collected":
            context.update(_opened(result.booking, now))
        if result.retry_after:
            response = render(request, "booking/pickup.html", context, status=429)
            response["Retry-After"] = str(result.retry_after)
            return response
    return render(request, "booking/pickup.html", context)
