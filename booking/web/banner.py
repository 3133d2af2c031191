"""The banner every page shows a buyer with a live priority hold from the waiting list: it is
theirs until when, and a link to book it (a context processor; the noted holds come read with
the session, see booking.engine.priority). Also what "Book it" does with a priority hold not
granted yet."""

from __future__ import annotations

import redis
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _

from accounts.access import identity_replies, request_person
from booking.engine.priority import priority_grant, priority_holds
from strongroom.store import UNAVAILABLE, StoreUnavailable, get_store

# Set on the request by a page that shows a hold itself (the hold's confirmation page).
SHOWN_HOLD = "strongroom_shown_hold"


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
    held = priority_holds(client=get_store(), person_id=person.id, along=along)
    # The page of one of them (its confirmation) says it already: the banner leaves it out.
    shown = getattr(request, SHOWN_HOLD, None)
    return {"priority_holds": [p for p in held if p.hold_id != shown]}


def priority_granted(
    request: HttpRequest, *, client: redis.Redis, owner: str, hold_id: str
) -> bool:
    """The buyer's "Book it" on a priority hold not granted yet (no mail sender came to it):
    granted now if they may have one more; False (and a message) when it went to everyone."""
    granted = priority_grant(client=client, person_id=int(owner), hold_id=hold_id)
    if granted == "paced":
        messages.warning(
            request,
            _(
                "You have made as many bookings in the last hour as one account may: the slot "
                "you waited for is not held for you, and is open to everyone now."
            ),
        )
        return False
    if granted != "released":
        return True
    messages.warning(
        request,
        _(
            "You already have as many slots held from the waiting list as one buyer may keep "
            "at once: this one is open to everyone now."
        ),
    )
    return False


def speculative(request: HttpRequest) -> bool:
    """Whether the browser fetches the page ahead of a click (a prefetch or a prerender:
    `Sec-Purpose`, Chrome's older `Purpose`, Firefox's older `X-Moz`, Safari's `X-Purpose:
    preview`, which Top Sites sends fetching pages of the history again). The "Book it" link
    grants a hold on its GET (one click from the mail); a fetch ahead must not spend the buyer's
    allowance on a slot they never chose."""
    asked = " ".join(
        request.headers.get(name, "") for name in ("Sec-Purpose", "Purpose", "X-Moz", "X-Purpose")
    ).lower()
    return any(word in asked for word in ("prefetch", "prerender", "preview"))


def speculation_refused() -> HttpResponse:
    """503, kept by no cache: a browser drops a prefetch that was not a success and asks again
    when the buyer really follows the link."""
    response = HttpResponse(status=503)
    response["Cache-Control"] = "no-store"
    response["Vary"] = "Sec-Purpose, Purpose, X-Moz, X-Purpose"
    return response
