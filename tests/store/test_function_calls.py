"""The catalog Lua and the accounts Lua declare each function's KEYS and ARGV names, and
catalog/calls.py and accounts/calls.py declare the same ones for Python (booking has its own
test, tests/booking/domain/test_booking_calls.py); these tests read the Lua's declarations and
check that the two sides agree, and that a drift would be caught."""

from __future__ import annotations

from dataclasses import replace

import pytest

from accounts import calls as accounts_calls
from catalog import calls as catalog_calls
from strongroom import outbox
from strongroom.calls import FunctionSpec
from tests.lua_support import registered_functions, spec_mismatches

LIBRARIES = {
    "catalog/lua/catalog": catalog_calls.SPECS,
    "accounts/lua/accounts": accounts_calls.SPECS,
    "strongroom/lua/mail.lua": outbox.SPECS,
}
FUNCTIONS = [(path, spec) for path, specs in LIBRARIES.items() for spec in specs]


@pytest.mark.parametrize(("path", "spec"), FUNCTIONS, ids=[s.name for _, s in FUNCTIONS])
def test_each_function_takes_its_keys_and_arguments_in_the_order_python_sends_them(
    path: str, spec: FunctionSpec
) -> None:
    assert spec_mismatches(path, (spec,)) == []


@pytest.mark.parametrize(("path", "specs"), LIBRARIES.items(), ids=list(LIBRARIES))
def test_every_registered_function_has_a_call_spec(
    path: str, specs: tuple[FunctionSpec, ...]
) -> None:
    assert registered_functions(path) == {spec.name for spec in specs}


@pytest.mark.parametrize(("path", "spec"), FUNCTIONS, ids=[s.name for _, s in FUNCTIONS])
def test_a_lua_list_that_drifts_from_python_is_caught(path: str, spec: FunctionSpec) -> None:
    assert spec_mismatches(path, (replace(spec, keys=(*spec.keys, "extra")),)) != []
    assert spec_mismatches(path, (replace(spec, args=(*spec.args, "extra")),)) != []


def test_a_call_with_a_missing_or_unknown_name_is_refused_before_it_is_sent() -> None:
    staff_set = accounts_calls.STAFF_SET
    with pytest.raises(ValueError, match="is_staff"):
        staff_set.call(keys={"person": "k"}, args={})
    with pytest.raises(ValueError, match="other"):
        staff_set.call(keys={"person": "k", "other": "k2"}, args={"is_staff": 1})
    assert staff_set.call(keys={"person": "k"}, args={"is_staff": 1}, more_args=[2]) == (
        ["k"],
        [1, 2],
    )


def test_a_reply_is_read_by_name_and_a_longer_one_is_refused() -> None:
    save = catalog_calls.SAVE
    assert save.reply_of(["exists"]) == {"status": "exists", "version": None}
    assert save.reply_of(["ok", "3"])["version"] == "3"
    with pytest.raises(ValueError, match="catalog_book_save"):
        save.reply_of(["ok", "3", "extra"])
