"""One call spec per Redis Function of accounts/lua/accounts.lua (see strongroom.calls).
accounts.lua declares the same names (its `*_KEYS` and `*_ARGS`); tests/test_function_calls.py
reads them from the Lua and checks that they agree with this module."""

from __future__ import annotations

from strongroom.calls import FunctionSpec

SIGNUP = FunctionSpec(
    "accounts_signup",
    "SIGNUP",
    ("by_name", "names", "person", "last_id"),
    ("name_key", "username", "password", "is_staff", "joined_ms", "id", "token"),
    reply=("status", "value"),
)
LOGIN_FAILURE = FunctionSpec(
    "accounts_login_failure",
    "LOGIN_FAILURE",
    ("failures", "lock"),
    ("now_ms", "window_ms", "limit", "lock_ms", "attempt_id"),
)
RECENT_LOGINS = FunctionSpec(
    "accounts_recent_logins", "RECENT_LOGINS", ("recent", "names"), ("count",)
)
TOP_LOGINS = FunctionSpec("accounts_top_logins", "TOP_LOGINS", ("leaderboard", "names"), ("count",))
STAFF_SET = FunctionSpec("accounts_staff_set", "STAFF_SET", ("person",), ("is_staff",))
SPECS = (SIGNUP, LOGIN_FAILURE, RECENT_LOGINS, TOP_LOGINS, STAFF_SET)
