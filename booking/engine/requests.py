"""What the slot-taking functions (claim, hold, move) share after their call: a request is read
once (strictly, by booking.domain.parser) and checked again by the function itself, after it
recognises a repeat of its own (the day-ahead rule at call time: `first_day`); the function's
refusals as Python raises them."""

from __future__ import annotations

import datetime as dt
from typing import Any

from booking.domain.parser import (
    InvalidRequest,
    SlotRequest,
    check_dates,
    check_size,
    request_taken_once,
)
from booking.domain.refusals import refusal


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
        # As the parser words it; said of the first day when this clock still allows it (the
        # call's first bookable day was worked out a moment later).
        said = check_dates(request.dates, now) or [refusal("no_longer", date=request.dates[0])]
        raise InvalidRequest(said)
    raise ValueError(f"{function} refused a malformed request ({answer['what']})")
