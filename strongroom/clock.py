"""Epoch milliseconds, the store's unit of time: the one home of the conversions."""

from __future__ import annotations

import datetime as dt
import time


def to_ms(moment: dt.datetime) -> int:
    """An aware datetime as epoch milliseconds."""
    return int(moment.timestamp() * 1000)


def from_ms(value: str | int | float | None) -> dt.datetime | None:
    """An aware datetime (UTC) from epoch milliseconds, or None for None or ''."""
    if value in (None, ""):
        return None
    return dt.datetime.fromtimestamp(int(float(value)) / 1000, tz=dt.UTC)


def now_ms() -> int:
    """The site's clock in epoch milliseconds (time.time, so frozen clocks apply)."""
    return int(time.time() * 1000)
