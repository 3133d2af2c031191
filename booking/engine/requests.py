"""What the slot-taking functions (claim, hold) share: a request's last check before the call,
its ARGV fields, and the refusal of a malformed request."""

from __future__ import annotations

import datetime as dt
from typing import Any

from booking.domain.parser import InvalidRequest, SlotRequest, check_dates, check_size
from booking.domain.rules import (
    booking_id_room,
)


def request_args(request: SlotRequest) -> dict[str, object]:
    """The request as the functions take it: cls, days "3,4", hstart, hend, boxes "1,2"."""
    start, end = request.hours or (0, 0)
    return {
        "cls": request.cls,
        "days": ",".join(str(d) for d in request.days),
        "hstart": str(start),
        "hend": str(end),
        "boxes": ",".join(str(b) for b in request.boxes),
    }


def check_id(kind: str, value: str, room: int) -> None:
    if booking_id_room(value) != room:
        raise ValueError(f"{kind} {value!r} is not an id of room {room}")


def request_recheck(request: SlotRequest, now: dt.datetime | None) -> None:
    if not isinstance(request, SlotRequest):
        raise TypeError("request must be a SlotRequest (use slot_request_parse)")
    # The request may have been parsed before midnight: the day-ahead rule holds at claim time.
    errors = check_dates(request.dates, now) + check_size(request)
    if errors:
        raise InvalidRequest(errors)


def refuse_invalid(function: str, answer: dict[str, Any]) -> None:
    # The function refused a malformed request before any write: a SlotRequest built by hand.
    if answer["status"] == "invalid":
        raise ValueError(f"{function} refused a malformed request ({answer['what']})")
