"""Epoch milliseconds, the store's unit of time: the one home of the conversions."""

from __future__ import annotations

import datetime as dt
import math
import time


def to_ms(moment: dt.datetime) -> int:
    """An aware datetime as epoch milliseconds."""
    return int(moment.timestamp() * 1000)


def from_ms(value: str | int | float | None) -> dt.datetime | None:
    """An aware datetime (UTC) from epoch milliseconds, or None for None or ''."""
    if value in (None, ""):
        return None
    return dt.datetime.fromtimestamp(int(float(value)) / 1000, tz=dt.UTC)


def minute_up(moment: dt.datetime) -> dt.datetime:
    """The moment rounded up to a whole minute: an end shown as HH:MM ("held until 01:09") is
    never earlier than the real one (01:08:46), so nobody is told a time that is not yet true."""
    whole = moment.replace(second=0, microsecond=0)
    return whole if whole == moment else whole + dt.timedelta(minutes=1)


def now_ms() -> int:
    """The site's clock in epoch milliseconds (time.time, so frozen clocks apply)."""
    return int(time.time() * 1000)


def minutes_until(moment_ms: int) -> int:
    """Whole minutes from now until `moment_ms`, rounded up and at least 1: "try again in N
    minutes" never sends anyone back too early."""
    return max(1, math.ceil((moment_ms - now_ms()) / 60_000))
