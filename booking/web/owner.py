"""The booking owner of a request: the signed-in person's id (bookings, holds and waits are
kept under it), and the owner's own booking."""

from __future__ import annotations

from django.http import Http404, HttpRequest

from accounts.access import request_person
from booking.domain.records import Booking
from booking.engine.bookings import booking_get
from strongroom.store import get_store


def request_owner(request: HttpRequest) -> str | None:
    person = request_person(request)
    return str(person.id) if person.is_authenticated else None


def signed_in_owner(request: HttpRequest) -> str:
    """The owner id of a view behind login_required."""
    owner = request_owner(request)
    assert owner is not None
    return owner


def own_booking(request: HttpRequest, booking_id: str) -> Booking:
    """The signed-in person's booking, or 404 (other people's bookings do not exist here)."""
    found = booking_get(client=get_store(), booking_id=booking_id)
    if found is None or found.owner_id != request_owner(request):
        raise Http404
    return found
