"""The formats the booking Lua and Python share: the hold value's fields, the stats hash's version,
day width and field names. The booking Lua declares the same names (`HOLD_FIELDS`, `STATS_VERSION`,
`DAY_WIDTH`); tests/booking/domain/test_booking_calls.py reads them from the Lua and
checks that they agree. The call specs (KEYS and ARGV by name, in order) live with the engine
module that makes each call."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from booking.domain.rules import calendar_day, month_first, month_length, month_name

DAY_WIDTH = 7  # digits of one day in a per-day stats field
STATS_VERSION = "1"  # the `v` of an exact stats hash
HOLD_FIELDS = ("expiry", "owner", "cls", "days", "hstart", "hend", "boxes")  # joined by '|'


def hold_value_split(value: str) -> dict[str, str]:
    """A hold's stored value as its named fields (HOLD_FIELDS)."""
    parts = value.split("|")
    if len(parts) != len(HOLD_FIELDS):
        raise ValueError(f"not a hold value: {value[:40]!r}")
    return dict(zip(HOLD_FIELDS, parts, strict=True))


def request_months(dates: Iterable[dt.date]) -> tuple[dt.date, ...]:
    """The calendar months (their first days, in order) that `dates` fall in: the inventory
    keys one call passes, one per month."""
    return tuple(sorted({month_first(d) for d in dates}))


def months_arg(months: Iterable[dt.date]) -> str:
    """The months of a call's inventory keys as the booking Lua reads them (same order as the
    keys): 'YYYY-MM/<calendar day of the 1st>/<days in the month>', comma-joined."""
    return ",".join(f"{month_name(m)}/{calendar_day(m)}/{month_length(m)}" for m in months)


def stats_field(kind: str, month: str, cls: str, detail: str = "") -> str:
    """The name of a stats hash field as the booking Lua writes it: `slots` and `active` (per-day
    fields), `status` (detail: the status) and `made` (detail: the local creation date)."""
    if kind in ("slots", "active"):
        return f"{kind}:{month}:{cls}"
    if kind in ("status", "made") and detail:
        return f"{kind}:{month}:{cls}:{detail}"
    raise ValueError(f"no stats field {kind!r}")
