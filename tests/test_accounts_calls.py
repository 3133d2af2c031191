"""accounts.lua and accounts/calls.py declare each function's KEYS and ARGV names once each;
these tests read the Lua's declarations and check that the two sides agree."""

from __future__ import annotations

from dataclasses import replace

import pytest

from accounts import calls
from strongroom.calls import FunctionSpec
from tests.lua_support import registered_functions, spec_mismatches

LUA_PATH = "accounts/lua/accounts.lua"


@pytest.mark.parametrize("spec", calls.SPECS, ids=lambda s: s.name)
def test_each_function_takes_its_keys_and_arguments_in_the_order_python_sends_them(
    spec: FunctionSpec,
) -> None:
    assert spec_mismatches(LUA_PATH, (spec,)) == []


def test_every_registered_accounts_function_has_a_call_spec() -> None:
    assert registered_functions(LUA_PATH) == {spec.name for spec in calls.SPECS}


def test_an_accounts_lua_list_that_drifts_from_python_is_caught() -> None:
    drifted = replace(calls.SIGNUP, keys=tuple(reversed(calls.SIGNUP.keys)))
    assert spec_mismatches(LUA_PATH, (drifted,)) != []


def test_a_call_with_a_missing_or_unknown_name_is_refused_before_it_is_sent() -> None:
    with pytest.raises(ValueError, match="is_staff"):
        calls.STAFF_SET.call(keys={"person": "k"}, args={})
    with pytest.raises(ValueError, match="other"):
        calls.STAFF_SET.call(keys={"person": "k", "other": "k2"}, args={"is_staff": 1})
