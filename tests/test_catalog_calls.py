"""catalog.lua and the catalog's Python name the same key positions: the edit functions' fixed
keys and the first tag set of a query (read from the Lua's declarations), and each function's
KEYS and ARGV by name (catalog/calls.py)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from catalog import calls
from catalog.selectors import FIRST_TAG_KEY, SCRATCH_RESULT_KEY
from catalog.services import fixed_keys
from strongroom.calls import FunctionSpec
from tests.lua_support import registered_functions, spec_mismatches

LUA_PATH = "catalog/lua/catalog.lua"
LUA = (Path(__file__).resolve().parent.parent / LUA_PATH).read_text()


def lua_number(name: str) -> int:
    match = re.search(rf"^local {name} = ([0-9]+)$", LUA, re.M)
    assert match is not None, f"catalog.lua declares no {name}"
    return int(match.group(1))


def test_the_edit_functions_take_as_many_fixed_keys_as_python_sends() -> None:
    assert lua_number("FIXED") == len(fixed_keys("b1"))


def test_a_query_finds_its_first_tag_set_where_python_puts_it() -> None:
    assert lua_number("FIRST_TAG") == FIRST_TAG_KEY
    # The scratch result is the first of the three scratch keys, right before the tag sets.
    assert SCRATCH_RESULT_KEY == FIRST_TAG_KEY - 3


@pytest.mark.parametrize("spec", calls.SPECS, ids=lambda s: s.name)
def test_each_function_takes_its_keys_and_arguments_in_the_order_python_sends_them(
    spec: FunctionSpec,
) -> None:
    assert spec_mismatches(LUA_PATH, (spec,)) == []


def test_every_registered_catalog_function_has_a_call_spec() -> None:
    assert registered_functions(LUA_PATH) == {spec.name for spec in calls.SPECS}


def test_a_catalog_lua_list_that_drifts_from_python_is_caught() -> None:
    drifted = replace(calls.SAVE, args=(*calls.SAVE.args[:-2], "n_new", "n_old"))
    assert spec_mismatches(LUA_PATH, (drifted,)) != []


def test_a_reply_is_read_by_name_and_a_longer_one_is_refused() -> None:
    assert calls.SAVE.reply_of(["exists"]) == {"status": "exists", "version": None}
    assert calls.SAVE.reply_of(["ok", "3"])["version"] == "3"
    with pytest.raises(ValueError, match="catalog_book_save"):
        calls.SAVE.reply_of(["ok", "3", "extra"])
