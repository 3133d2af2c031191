"""Reading the call specs a Lua library declares, for the tests that check them against Python."""

from __future__ import annotations

import re
from pathlib import Path

from strongroom.calls import FunctionSpec
from strongroom.lua_sources import library_text

ROOT = Path(__file__).resolve().parent.parent


def lua_lists(path: str) -> dict[str, tuple[str, ...]]:
    """The `local NAME = {'a', 'b'}` lists of a Lua file (a list may span lines), and the
    `local NAME = OTHER` aliases of them, by name."""
    text = library_text(ROOT / path)
    found = {
        match.group(1): tuple(re.findall(r"'([a-z_]+)'", match.group(2)))
        for match in re.finditer(r"^local ([A-Z_]+) = \{([^}]*)\}", text, re.M)
    }
    for match in re.finditer(r"^local ([A-Z_]+) = ([A-Z_]+)$", text, re.M):
        if match.group(2) in found:
            found[match.group(1)] = found[match.group(2)]
    return found


def registered_functions(path: str) -> set[str]:
    """The names a Lua library registers."""
    text = library_text(ROOT / path)
    return set(re.findall(r"function_name ?= ?['\"](\w+)['\"]", text))


def spec_mismatches(path: str, specs: tuple[FunctionSpec, ...]) -> list[str]:
    """Where the Lua's KEYS / ARGV lists differ from the Python specs ([] when they agree)."""
    lists = lua_lists(path)
    wrong = []
    for spec in specs:
        for part, names in (("KEYS", spec.keys), ("ARGS", spec.args)):
            declared = lists.get(f"{spec.lua}_{part}")
            if declared != names:
                wrong.append(f"{spec.name} {part}: Lua {declared}, Python {names}")
    return wrong
