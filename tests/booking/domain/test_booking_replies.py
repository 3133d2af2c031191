"""Each booking function's reply is declared once per side: its status words with the names of
the fields after each (`<LUA>_REPLIES` in the Lua, `replies` in the engine module's call spec),
or its fixed fields (`_REPLY` / `reply`), and the groups of keys a call adds after its named ones
(`_KEY_TAILS` / `key_tails`). Python reads replies through the spec, by name. These tests check
that the declarations agree, that every `return {...}` of a function answers with a declared
status word and no more fields than declared, and that a drift on either side is noticed."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from booking.engine import specs
from strongroom.calls import FunctionSpec
from strongroom.lua_sources import library_text

ROOT = Path(__file__).resolve().parents[3]
LUA = library_text(ROOT / "booking" / "lua" / "booking")
# The functions with a plain reply: the release and the mark of a claim answer 1 or 0.
PLAIN = {"booking_hold_release", "booking_claim_unsure"}


def _lua_list(lua: str, name: str) -> tuple[str, ...]:
    match = re.search(rf"^local {name} = \{{([^}}]*)\}}", lua, re.M)
    return tuple(re.findall(r"'([^']*)'", match.group(1))) if match else ()


def _top_level_items(text: str) -> list[str]:
    """The items of a Lua table constructor's inside, split at commas outside brackets."""
    items, depth, current = [], 0, ""
    for char in text:
        depth += (char in "({[" and 1) or 0
        depth -= (char in ")}]" and 1) or 0
        if char == "," and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += char
    return [item for item in [*items, current.strip()] if item]


def _returns(lua: str, function: str) -> list[list[str]]:
    """The table each `return {...}` of a registered function's body answers with."""
    callback = re.search(rf"function_name = '{function}', callback = (\w+)", lua)
    assert callback is not None, function
    body = re.search(
        rf"^local function {callback.group(1)}\(keys, args\)\n(.*?)^end$", lua, re.M | re.S
    )
    assert body is not None, function
    found = []
    for start in (m.end() for m in re.finditer(r"return \{", body.group(1))):
        depth, end = 1, start
        while depth:
            depth += {"{": 1, "}": -1}.get(body.group(1)[end], 0)
            end += 1
        found.append(_top_level_items(body.group(1)[start : end - 1]))
    return found


def reply_mismatches(lua: str, spec: FunctionSpec) -> list[str]:
    """Where the Lua and the spec disagree about a function's reply and key tails."""
    wrong = []
    for part, names in (
        ("REPLIES", spec.replies),
        ("REPLY", spec.reply),
        ("KEY_TAILS", spec.key_tails),
    ):
        if _lua_list(lua, f"{spec.lua}_{part}") != names:
            wrong.append(
                f"{spec.name} {part}: Lua {_lua_list(lua, f'{spec.lua}_{part}')}, Python {names}"
            )
    shapes = {words[0]: words[1:] for words in (shape.split() for shape in spec.replies)}
    for items in _returns(lua, spec.name) if shapes else ():
        if not items[0].startswith("'"):
            continue  # a word chosen by a helper (move_refusal): its own returns are literals
        word = items[0].strip("'")
        if word not in shapes:
            wrong.append(f"{spec.name} answers {items[0]}, not declared")
        elif not any(n.startswith("*") for n in shapes[word]) and len(items) - 1 > len(
            shapes[word]
        ):
            wrong.append(f"{spec.name} answers {word} with {items[1:]}, declared {shapes[word]}")
    return wrong


@pytest.mark.parametrize("spec", specs.SPECS, ids=lambda s: s.name)
def test_each_reply_and_key_tail_is_declared_alike_on_both_sides(spec: FunctionSpec) -> None:
    assert spec.name in PLAIN or spec.replies or spec.reply
    assert reply_mismatches(LUA, spec) == []


@pytest.mark.parametrize("spec", [s for s in specs.SPECS if s.replies], ids=lambda s: s.name)
def test_a_reply_that_drifts_on_either_side_is_noticed(spec: FunctionSpec) -> None:
    first = spec.replies[0]
    assert reply_mismatches(LUA, replace(spec, replies=spec.replies[1:])) != []
    # A copy of the Lua in which the function answers with a status word nobody declared.
    word = first.split()[0]
    body = re.search(rf"return \{{'{word}'", LUA)
    assert body is not None
    function_of = [s for s in specs.SPECS if s.replies and s.replies[0].split()[0] == word]
    drifted = LUA.replace(f"return {{'{word}'", "return {'renamed'")
    assert all(reply_mismatches(drifted, s) != [] for s in function_of)


def test_a_key_tail_that_drifts_is_noticed_and_a_call_names_its_tails() -> None:
    claim = next(s for s in specs.SPECS if s.name == "booking_claim")
    assert reply_mismatches(LUA, replace(claim, key_tails=("date_index", "person_index"))) != []
    keys = dict.fromkeys(claim.keys, "k")
    args = dict.fromkeys(claim.args, "a")
    tails = {"inventories": ["i"], "person_index": ["p"], "date_index": ["d"]}
    call_keys, _ = claim.call(keys=keys, args=args, tails=tails)
    assert call_keys[-3:] == ["i", "p", "d"]
    with pytest.raises(ValueError, match="key tails"):
        claim.call(keys=keys, args=args, tails={"pace": ["x"]})  # not after the indexes


def test_a_reply_is_read_by_name_and_an_undeclared_status_is_refused() -> None:
    claim = next(s for s in specs.SPECS if s.name == "booking_claim")
    assert claim.answer_of(["taken", "1:0:1:0", "2:0:1:1"]) == {
        "status": "taken",
        "slots": ["1:0:1:0", "2:0:1:1"],
    }
    assert claim.answer_of(["ok", ["id", "x"]]) == {
        "status": "ok",
        "record": ["id", "x"],
        "fulfilled": None,
    }
    with pytest.raises(ValueError, match="no status 'sold'"):
        claim.answer_of(["sold"])
    with pytest.raises(ValueError, match="paced"):
        claim.answer_of(["paced", "1", "2"])
