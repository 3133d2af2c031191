"""The catalog Lua and the catalog's Python name the same key positions: the edit functions' fixed
keys and the first tag set of a query (both sides derive them from the declared key lists,
which tests/store/test_function_calls.py checks agree)."""

from __future__ import annotations

import re
from pathlib import Path

from catalog.calls import QUERY, SAVE
from catalog.selectors import FIRST_TAG_KEY, query_keys
from catalog.services import fixed_keys
from strongroom.lua_sources import library_text

LUA = library_text(Path(__file__).resolve().parents[2] / "catalog" / "lua" / "catalog")


def lua_value(name: str) -> str:
    match = re.search(rf"^local {name} = (.+?)(?:\s+--.*)?$", LUA, re.M)
    assert match is not None, f"the catalog Lua declares no {name}"
    return match.group(1).strip()


def test_the_edit_functions_take_as_many_fixed_keys_as_python_sends() -> None:
    assert lua_value("FIXED") == "#SAVE_KEYS"
    assert len(fixed_keys("b1")) == len(SAVE.keys)


def test_a_query_finds_its_first_tag_set_where_python_puts_it() -> None:
    assert lua_value("FIRST_TAG") == "#QUERY_KEYS + 1"
    assert len(QUERY.keys) + 1 == FIRST_TAG_KEY
    # The fixed keys (the all-books set, the tag registry, three orders, the edition) come first.
    assert len(query_keys([])) == FIRST_TAG_KEY - 1
