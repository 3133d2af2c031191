"""The formats the booking Lua and Python share: the hold value's fields, the stats hash's version,
day width and field names. The booking Lua declares the same names (`HOLD_FIELDS`, `STATS_VERSION`,
`DAY_WIDTH`); tests/booking/domain/test_booking_calls.py reads them from the Lua and
checks that they agree. The call specs (KEYS and ARGV by name, in order) live with the engine
module that makes each call."""

from __future__ import annotations

DAY_WIDTH = 7  # digits of one day in a per-day stats field
STATS_VERSION = "1"  # the `v` of an exact stats hash
HOLD_FIELDS = ("expiry", "owner", "cls", "days", "hstart", "hend", "boxes")  # joined by '|'


def hold_value_split(value: str) -> dict[str, str]:
    """A hold's stored value as its named fields (HOLD_FIELDS)."""
    parts = value.split("|")
    if len(parts) != len(HOLD_FIELDS):
        raise ValueError(f"not a hold value: {value[:40]!r}")
    return dict(zip(HOLD_FIELDS, parts, strict=True))


def stats_field(kind: str, season: str, cls: str, detail: str = "") -> str:
    """The name of a stats hash field as the booking Lua writes it: `slots` and `active` (per-day
    fields), `status` (detail: the status) and `made` (detail: the local creation date)."""
    if kind in ("slots", "active"):
        return f"{kind}:{season}:{cls}"
    if kind in ("status", "made") and detail:
        return f"{kind}:{season}:{cls}:{detail}"
    raise ValueError(f"no stats field {kind!r}")
