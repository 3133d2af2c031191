"""What the slot-taking functions (claim, hold, move) share: a request is read once (strictly,
by booking.domain.parser) and checked again by the function itself, last (the day-ahead rule at
call time: `first_day`); its ARGV fields; the refusals of the function as Python raises them."""

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


def request_taken_once(request: SlotRequest) -> None:
    """A request comes from the parser (read once, strictly), never built by hand."""
    if not isinstance(request, SlotRequest):
        raise TypeError("request must be a SlotRequest (use slot_request_parse)")


def request_recheck(request: SlotRequest, now: dt.datetime | None) -> None:
    """For a function that does not check the day-ahead rule itself (the move)."""
    request_taken_once(request)
    errors = check_dates(request.dates, now) + check_size(request)
    if errors:
        raise InvalidRequest(errors)


def refuse_invalid(
    function: str,
    answer: dict[str, Any],
    request: SlotRequest | None = None,
    now: dt.datetime | None = None,
) -> None:
    """A refusal before any write: a day no longer bookable (the request was read before
    midnight) as the parser words it; anything else is a SlotRequest built by hand."""
    if answer["status"] != "invalid":
        return
    if answer["what"] == "first_day" and request is not None:
        raise InvalidRequest(check_dates(request.dates, now) or [answer["what"]])
    raise ValueError(f"{function} refused a malformed request ({answer['what']})")
