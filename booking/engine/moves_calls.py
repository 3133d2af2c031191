"""The calls of a move to another room (booking/lua/booking/move_rooms.lua), declared once for
booking/engine/moves_rooms.py, which makes them, and the tests that check both sides agree."""

from __future__ import annotations

from strongroom.calls import FunctionSpec

MOVE_IN = FunctionSpec(
    "booking_move_in",
    "MOVE_IN",
    ("record", "registry", "codes", "holds", "hold_days", "stats", "moves", "ledger",
     "closures", "edition", "gone"),
    ("owner", "cls", "months", "days", "hstart", "hend", "boxes", "dates", "booking_id",
     "from_id", "move_id", "code_mac", "now_ms", "room", "first_day"),
    replies=("held", "taken *slots", "code_clash", "closed reason", "gone", "moved_away",
             "invalid what"),
    key_tails=("inventories",),
)  # fmt: skip
MOVE_OUT = FunctionSpec(
    "booking_move_out",
    "MOVE_OUT",
    ("record", "registry", "codes", "ledger", "audit", "stats", "waits", "wait_notices",
     "holds", "hold_days", "outbox", "edition", "gone", "closures"),
    ("actor", "is_staff", "today", "move_id", "to_id", "now_ms", "audit_maxlen", "room",
     "first_day", "priority_hold_id", "priority_hold_ms", "cls", "days_n", "day_starts"),
    replies=("moved record", "aborted", "not_found", "forbidden", "cancelled", "moved_away",
             "collected", "started", "other_class", "stale", "gone", "invalid what"),
    key_tails=("inventories",),
)  # fmt: skip
MOVE_COMMIT = FunctionSpec(
    "booking_move_commit",
    "MOVE_COMMIT",
    ("record", "codes", "ledger", "stats", "audit", "outbox", "moves", "unindexed", "edition"),
    ("move_id", "from_fields", "now_ms", "audit_maxlen", "room", "person_score", "date_scores",
     "actor"),
    replies=("moved record", "not_found", "invalid what"),
    key_tails=("person_index", "date_index"),
)  # fmt: skip
MOVE_ABORT = FunctionSpec(
    "booking_move_abort", "MOVE_ABORT", ("record", "edition"), ("move_id",),
    replies=("moved", "aborted"),
)  # fmt: skip
MOVE_RELEASE = FunctionSpec(
    "booking_move_release",
    "MOVE_RELEASE",
    ("record", "registry", "stats", "moves", "edition"),
    ("move_id",),
    replies=("released", "moved"),
    key_tails=("inventories",),
)
# key tails of MOVE_IN: the new days' month bitmaps (ARGV months names them); of MOVE_OUT and
# MOVE_RELEASE: the bitmaps the record names (its `inv`).
