"""One call spec per Redis Function of accounts/lua/accounts/ (see strongroom.calls).
The Lua declares the same names (its `*_KEYS` and `*_ARGS`); tests/store/test_function_calls.py
reads them from the Lua and checks that they agree with this module."""

from __future__ import annotations

from strongroom.calls import FunctionSpec

PERSON_CREATE = FunctionSpec(
    "accounts_person_create",
    "PERSON_CREATE",
    ("person",),
    ("username", "name_key", "password", "is_staff", "joined_ms", "token"),
)
NAME_CLAIM = FunctionSpec(
    "accounts_name_claim",
    "NAME_CLAIM",
    ("by_name", "names", "by_skeleton"),
    ("name_key", "id", "username", "skeleton"),
)
PERSON_DISCARD = FunctionSpec("accounts_person_discard", "PERSON_DISCARD", ("person",), ("token",))
LOGIN_GATE = FunctionSpec(
    "accounts_login_gate",
    "LOGIN_GATE",
    ("pair", "pair_lock", "trusted", "address", "address_lock", "name", "name_pace",
     "name_turns"),
    ("now_ms", "window_ms", "pair_limit", "lock_ms", "address_limit", "name_limit", "slow_ms",
     "attempt_id", "pace_free", "known_device"),
    reply=("verdict", "ends", "lock", "known"),
)  # fmt: skip
LOGIN_PASSED = FunctionSpec(
    "accounts_login_passed", "LOGIN_PASSED", LOGIN_GATE.keys, ("attempt_id", "trust_ms")
)
LOGIN_DROPPED = FunctionSpec(
    "accounts_login_dropped", "LOGIN_DROPPED", LOGIN_GATE.keys, ("attempt_id",)
)
SIGNUP_GATE = FunctionSpec(
    "accounts_signup_gate",
    "SIGNUP_GATE",
    ("attempts",),
    ("now_ms", "window_ms", "limit", "attempt_id"),
)
RECENT_LOGINS = FunctionSpec(
    "accounts_recent_logins", "RECENT_LOGINS", ("recent", "names"), ("count",)
)
TOP_LOGINS = FunctionSpec("accounts_top_logins", "TOP_LOGINS", ("leaderboard", "names"), ("count",))
STAFF_SET = FunctionSpec(
    "accounts_staff_set",
    "STAFF_SET",
    ("person",),
    ("is_staff",),
    replies=("changed username", "same username", "gone"),
)
EMAIL_FORGET = FunctionSpec(
    "accounts_email_forget", "EMAIL_FORGET", ("by_email",), ("email", "person_id")
)
EMAIL_CLAIM = FunctionSpec(
    "accounts_email_claim", "EMAIL_CLAIM", ("by_email",), ("email", "person_id")
)
EMAIL_CONFIRM = FunctionSpec("accounts_email_confirm", "EMAIL_CONFIRM", ("person",), ("email",))
EMAIL_SET = FunctionSpec("accounts_email_set", "EMAIL_SET", ("person",), ("email", "language"))
SKELETON_FORGET = FunctionSpec(
    "accounts_skeleton_forget", "SKELETON_FORGET", ("by_skeleton",), ("skeleton", "person_id")
)
MAIL_GATE = FunctionSpec(
    "accounts_mail_gate",
    "MAIL_GATE",
    ("person", "address", "client"),
    ("now_ms", "attempt_id", "person_limit", "person_window_ms", "address_limit",
     "address_window_ms", "client_limit", "client_window_ms"),
)  # fmt: skip
# KEYS then the views key of each day; ARGV then the views of each day, in the same order.
VISITS_ADD = FunctionSpec(
    "accounts_visits_add", "VISITS_ADD", ("applied",), ("flush_id", "now_ms", "keep_s")
)
SPECS = (
    PERSON_CREATE, NAME_CLAIM, PERSON_DISCARD, LOGIN_GATE, LOGIN_PASSED, LOGIN_DROPPED,
    SIGNUP_GATE,
    RECENT_LOGINS, TOP_LOGINS, STAFF_SET, EMAIL_CLAIM, EMAIL_CONFIRM, EMAIL_SET, EMAIL_FORGET,
    SKELETON_FORGET, MAIL_GATE, VISITS_ADD,
)  # fmt: skip
