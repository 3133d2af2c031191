"""The booking owner of a request: the signed-in person's id (bookings, holds and waits are
kept under it)."""

from __future__ import annotations

from django.http import HttpRequest

from accounts.access import request_person


def request_owner(request: HttpRequest) -> str | None:
    person = request_person(request)
    return str(person.id) if person.is_authenticated else None


def signed_in_owner(request: HttpRequest) -> str:
    """The owner id of a view behind login_required."""
    owner = request_owner(request)
    assert owner is not None
    return owner
