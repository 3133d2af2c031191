"""One call spec per Redis Function of booking/lua/booking.lua, and the formats the two sides
share. booking.lua declares the same names (its `*_KEYS`, `*_ARGS`, `HOLD_FIELDS`,
`STATS_VERSION`, `DAY_WIDTH`); tests/test_booking_calls.py reads them from the Lua and checks that
they agree with this module, so the order of a call's keys and arguments exists once per side.

A spec builds a call from named values: `CLAIM.call(keys={...}, args={...})` gives the KEYS and
ARGV lists in the function's order, and refuses a missing or unknown name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DAY_WIDTH = 7  # digits of one day in a per-day stats field
STATS_VERSION = "1"  # the `v` of an exact stats hash
HOLD_FIELDS = ("expiry", "owner", "cls", "days", "hstart", "hend", "boxes")  # joined by '|'


@dataclass(frozen=True)
class FunctionSpec:
    """The KEYS and ARGV of one function, by name, in order (`lua`: the prefix of its tables
    in booking.lua). Room-wide functions take more keys and arguments after these (`more_*`)."""

    name: str
    lua: str
    keys: tuple[str, ...]
    args: tuple[str, ...]

    def call(
        self,
        *,
        keys: Mapping[str, str],
        args: Mapping[str, object],
        more_keys: Sequence[str] = (),
        more_args: Sequence[object] = (),
    ) -> tuple[list[str], list[object]]:
        """KEYS and ARGV of a call, in the function's order."""
        if set(keys) != set(self.keys) or set(args) != set(self.args):
            wrong = set(keys) ^ set(self.keys) | set(args) ^ set(self.args)
            raise ValueError(f"{self.name}: missing or unknown {sorted(wrong)}")
        return (
            [keys[name] for name in self.keys] + list(more_keys),
            [args[name] for name in self.args] + list(more_args),
        )


CLAIM = FunctionSpec(
    "booking_claim",
    "CLAIM",
    ("inventory", "registry", "record", "ledger", "codes", "holds", "audit", "stats"),
    ("owner", "cls", "season", "days", "hstart", "hend", "boxes", "booking_id", "now_ms",
     "code_mac", "code_sealed", "dates", "hold_id", "audit_maxlen", "room", "season_bytes",
     "season_days", "made"),
)  # fmt: skip
HOLD = FunctionSpec(
    "booking_hold",
    "HOLD",
    ("inventory", "holds", "audit"),
    ("owner", "cls", "days", "hstart", "hend", "boxes", "hold_id", "now_ms", "ttl_ms",
     "audit_maxlen", "room", "season_days"),
)  # fmt: skip
HOLD_RELEASE = FunctionSpec(
    "booking_hold_release", "HOLD_RELEASE", ("holds",), ("hold_id", "owner")
)
CANCEL = FunctionSpec(
    "booking_cancel",
    "CANCEL",
    ("record", "inventory", "registry", "audit", "stats"),
    ("actor", "is_staff", "today", "reason", "now_ms", "audit_maxlen", "request_id"),
)
PICKUP = FunctionSpec(
    "booking_pickup",
    "PICKUP",
    ("lock", "failures", "codes", "record", "audit", "stats"),
    ("code_mac", "booking_id", "now_ms", "today", "minute", "grace_minutes", "max_failures",
     "window_ms", "lock_ms", "attempt_id", "audit_maxlen", "room", "yesterday"),
)  # fmt: skip
# more_keys: the inventory keys, the record keys, then the stats key.
FLUSH_ROOM = FunctionSpec(
    "booking_flush_room",
    "FLUSH_ROOM",
    ("registry", "ledger", "holds", "audit"),
    ("actor", "reason", "now_ms", "audit_maxlen", "n_inv", "n_rec", "room"),
)
# more_keys: the inventory keys, then the record keys; more_args: season, cls, bits per day of
# each inventory key, then the local creation date of each record.
STATS_REBUILD = FunctionSpec(
    "booking_stats_rebuild", "STATS_REBUILD", ("stats", "registry", "ledger"), ("n_inv", "n_rec")
)
SPECS = (CLAIM, HOLD, HOLD_RELEASE, CANCEL, PICKUP, FLUSH_ROOM, STATS_REBUILD)


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
