"""One call spec per Redis Function of booking/lua/booking.lua, and the formats the two sides
share. booking.lua declares the same names (its `*_KEYS`, `*_ARGS`, `HOLD_FIELDS`,
`STATS_VERSION`, `DAY_WIDTH`); tests/test_booking_calls.py reads them from the Lua and checks that
they agree with this module, so the order of a call's keys and arguments exists once per side.

A spec builds a call from named values: `CLAIM.call(keys={...}, args={...})` gives the KEYS and
ARGV lists in the function's order, and refuses a missing or unknown name."""

from __future__ import annotations

from strongroom.calls import FunctionSpec

DAY_WIDTH = 7  # digits of one day in a per-day stats field
STATS_VERSION = "1"  # the `v` of an exact stats hash
HOLD_FIELDS = ("expiry", "owner", "cls", "days", "hstart", "hend", "boxes")  # joined by '|'


CLAIM = FunctionSpec(
    "booking_claim",
    "CLAIM",
    ("inventory", "registry", "record", "ledger", "codes", "holds", "audit", "stats",
     "hold_days", "unindexed", "refs", "outbox", "hold_streaks", "waits", "wait_notices"),
    ("owner", "cls", "season", "days", "hstart", "hend", "boxes", "booking_id", "now_ms",
     "code_mac", "code_n", "dates", "hold_id", "audit_maxlen", "room", "season_bytes",
     "season_days", "made", "person_score", "date_scores", "reference", "pace_limit",
     "pace_window_ms"),
)  # fmt: skip
# more_keys of CLAIM: the person index and the date index where one call may write them (not on
# a cluster), then the buyer's pace when the call counts it (pace_limit > 0), else none.
HOLD = FunctionSpec(
    "booking_hold",
    "HOLD",
    ("inventory", "holds", "audit", "hold_days", "hold_streaks"),
    ("owner", "cls", "days", "hstart", "hend", "boxes", "hold_id", "now_ms", "ttl_ms",
     "audit_maxlen", "room", "season_days"),
)  # fmt: skip
HOLD_RELEASE = FunctionSpec(
    "booking_hold_release", "HOLD_RELEASE", ("holds", "hold_days"), ("hold_id", "owner")
)
CANCEL = FunctionSpec(
    "booking_cancel",
    "CANCEL",
    ("record", "inventory", "registry", "audit", "stats", "outbox", "waits", "wait_notices",
     "holds", "hold_days"),
    ("actor", "is_staff", "today", "reason", "now_ms", "audit_maxlen", "request_id", "first_day",
     "priority_hold_id", "priority_hold_ms"),
)  # fmt: skip
PICKUP = FunctionSpec(
    "booking_pickup",
    "PICKUP",
    ("lock", "failures", "codes", "record", "audit", "stats"),
    ("code_mac", "booking_id", "now_ms", "today", "minute", "grace_minutes", "max_failures",
     "window_ms", "lock_ms", "attempt_id", "audit_maxlen", "room", "yesterday"),
)  # fmt: skip
PICKUP_MISS = FunctionSpec(
    "booking_pickup_miss",
    "PICKUP_MISS",
    ("failures", "lock"),
    ("failure", "now_ms", "max_failures", "window_ms", "lock_ms"),
)
# more_keys: the inventory keys, the record keys, then the stats key.
FLUSH_ROOM = FunctionSpec(
    "booking_flush_room",
    "FLUSH_ROOM",
    ("registry", "ledger", "holds", "audit", "hold_days"),
    ("actor", "reason", "now_ms", "audit_maxlen", "n_inv", "n_rec", "room"),
)
# more_keys: the inventory keys, then the record keys; more_args: season, cls, bits per day of
# each inventory key, then the local creation date of each record.
STATS_REBUILD = FunctionSpec(
    "booking_stats_rebuild", "STATS_REBUILD", ("stats", "registry", "ledger"), ("n_inv", "n_rec")
)
# The waiting list (booking/waits.py).
WAIT = FunctionSpec(
    "booking_wait",
    "WAIT",
    ("waits", "inventory", "holds", "hold_days"),
    ("person", "cls", "day", "hstart", "hend", "box", "now_ms", "limit", "season_days",
     "first_day"),
)  # fmt: skip
WAITS_CHECK = FunctionSpec(
    "booking_waits_check",
    "WAITS_CHECK",
    (
        "waits",
        "wait_notices",
        "holds",
        "outbox",
        "inventory_a",
        "inventory_b",
        "inventory_c",
        "hold_days",
    ),
    ("now_ms", "first_day", "priority_hold_id", "priority_hold_ms", "room"),
)
# more_keys: the owner's record keys, then the inventory key each record names (same order).
OWNER_FORGET = FunctionSpec(
    "booking_owner_forget",
    "OWNER_FORGET",
    ("registry", "audit", "stats", "waits", "wait_notices", "holds", "outbox", "hold_days"),
    ("owner", "now_ms", "audit_maxlen", "n", "room", "first_day", "priority_hold_id",
     "priority_hold_ms"),
)  # fmt: skip
SPECS = (
    CLAIM, HOLD, HOLD_RELEASE, CANCEL, PICKUP, PICKUP_MISS, FLUSH_ROOM, STATS_REBUILD, WAIT,
    WAITS_CHECK, OWNER_FORGET,
)  # fmt: skip


def hold_value_split(value: str) -> dict[str, str]:
    """A hold's stored value as its named fields (HOLD_FIELDS)."""
    parts = value.split("|")
    if len(parts) != len(HOLD_FIELDS):
        raise ValueError(f"not a hold value: {value[:40]!r}")
    return dict(zip(HOLD_FIELDS, parts, strict=True))


def stats_field(kind: str, season: str, cls: str, detail: str = "") -> str:
    """The name of a stats hash field as booking.lua writes it: `slots` and `active` (per-day
    fields), `status` (detail: the status) and `made` (detail: the local creation date)."""
    if kind in ("slots", "active"):
        return f"{kind}:{season}:{cls}"
    if kind in ("status", "made") and detail:
        return f"{kind}:{season}:{cls}:{detail}"
    raise ValueError(f"no stats field {kind!r}")
