"""Staff acting for a buyer: a booking made for them through the buyer's own claim function."""

from __future__ import annotations

import datetime as dt

import redis

from booking.domain.parser import SlotRequest
from booking.domain.rules import booking_id_from
from booking.engine.claims import ClaimResult, booking_claim


def booking_book_for(
    *,
    client: redis.Redis,
    owner_id: str,
    request: SlotRequest,
    token: str,
    actor_id: str,
    owner_name: str = "",
    now: dt.datetime | None = None,
) -> ClaimResult:
    """Book `request` for the buyer `owner_id` (the same function, rules and receipt as their
    own booking); the id derives from `token` (the form's request id: a double press books
    once), and the claim's audit names the staff member (one entry, written with it)."""
    return booking_claim(
        client=client,
        owner_id=owner_id,
        request=request,
        booking_id=booking_id_from(token, room=request.room),
        now=now,
        actor_id=actor_id,
        audit_note=f"booked by staff for {owner_name or owner_id}",
    )
