"""Calendar files: "Add to calendar" for one booking, and a buyer's private subscription."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.crypto import constant_time_compare
from django.views.decorators.http import require_safe

from accounts.access import login_required, request_person
from booking.domain import calendar_files
from booking.engine.bookings import booking_get, bookings_of
from strongroom.decoders import text_values
from strongroom.keyspace import PERSON
from strongroom.store import get_store

FEED_LIMIT = 200


def _ics(body: bytes, filename: str, language: str) -> HttpResponse:
    response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    response["Content-Language"] = language  # the events' language (the feed's: the account's)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "private, no-store"
    return response


@require_safe
@login_required
def booking_ics(request: HttpRequest, booking_id: str) -> HttpResponse:
    """One of the buyer's bookings as an .ics file."""
    person = request_person(request)
    booking = booking_get(client=get_store(), booking_id=booking_id)
    if booking is None or booking.owner_id != str(person.id):
        raise Http404
    url = request.build_absolute_uri(reverse("booking:done", args=[booking.id]))
    body = calendar_files.booking_ics(booking, url=url, language=request.LANGUAGE_CODE)
    return _ics(body, f"{booking.reference}.ics", request.LANGUAGE_CODE)


@require_safe
def calendar_subscription(request: HttpRequest, token: str) -> HttpResponse:
    """The buyer's bookings for calendar apps: no login, the secret in the URL (revocable)."""
    person_text, _dash, secret = token.partition("-")
    if (
        not (person_text.isascii() and person_text.isdigit())
        or len(person_text) > 12
        or not secret
        or len(secret) > 64
    ):
        raise Http404
    client = get_store()
    username, stored, lang = text_values(
        client.hmget(PERSON.key(person_id=int(person_text)), "username", "cal_token", "lang")
    )
    if username is None or not stored or not constant_time_compare(stored, secret):
        raise Http404
    bookings = bookings_of(client=client, owner_id=person_text, limit=FEED_LIMIT)
    pages = [
        (b, request.build_absolute_uri(reverse("booking:done", args=[b.id]))) for b in bookings
    ]
    body = calendar_files.bookings_feed(
        pages, name=f"Strongroom · {username}", language=lang or "en"
    )
    return _ics(body, "strongroom.ics", lang or "en")
