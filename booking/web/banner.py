"""The banner every page shows a buyer with a live priority hold from the waiting list: it is
theirs until when, and a link to book it (a context processor; the noted holds come read with
the session, see booking.engine.priority)."""

from __future__ import annotations

from django.http import HttpRequest

from accounts.access import identity_replies, request_person
from booking.engine.priority import priority_holds
from strongroom.store import UNAVAILABLE, StoreUnavailable, get_store


def priority_banner(request: HttpRequest) -> dict[str, object]:
    """`priority_holds`: the signed-in buyer's live priority holds, soonest end first."""
    if not hasattr(request, "user"):
        # A page answered before the session was read (the store away, a refusal at the edge).
        return {"priority_holds": []}
    try:
        return _priority_banner(request)
    except (*UNAVAILABLE, StoreUnavailable):
        # The 503 page itself (the store went away): it shows no banner rather than fail too.
        return {"priority_holds": []}


def _priority_banner(request: HttpRequest) -> dict[str, object]:
    person = request_person(request)
    if not person.is_authenticated or person.id is None or request.headers.get("HX-Request"):
        return {"priority_holds": []}
    along = identity_replies(request, person_id=person.id)
    if along is None:
        # A session whose key names no one (made before keys named their person) reads its
        # person apart already: the banner waits for the next sign-in rather than cost more.
        return {"priority_holds": []}
    return {"priority_holds": priority_holds(client=get_store(), person_id=person.id, along=along)}
