"""catalog.lua and the catalog's Python name the same key positions: the edit functions' fixed
keys and the first tag set of a query (read from the Lua's declarations)."""

from __future__ import annotations

import re
from pathlib import Path

from catalog.selectors import FIRST_TAG_KEY, query_keys
from catalog.services import fixed_keys

LUA = (Path(__file__).resolve().parent.parent / "catalog" / "lua" / "catalog.lua").read_text()


def lua_number(name: str) -> int:
    match = re.search(rf"^local {name} = ([0-9]+)$", LUA, re.M)
    assert match is not None, f"catalog.lua declares no {name}"
    return int(match.group(1))


def test_the_edit_functions_take_as_many_fixed_keys_as_python_sends() -> None:
    assert lua_number("FIXED") == len(fixed_keys("b1"))


def test_a_query_finds_its_first_tag_set_where_python_puts_it() -> None:
    assert lua_number("FIRST_TAG") == FIRST_TAG_KEY
    # The fixed keys (the all-books set, the tag registry, three orders) come first.
    assert len(query_keys([])) == FIRST_TAG_KEY - 1
