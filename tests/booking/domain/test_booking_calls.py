"""The booking library (booking/lua/booking/, one file per function family) declares each
function's KEYS and ARGV names, the hold value's fields and the stats constants once; the engine
modules' call specs and booking/domain/formats.py declare them on the Python side. These tests
read the Lua's declarations and check the two sides agree, and that the stats fields the
functions write are the ones Python reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis

from booking.domain import formats
from booking.domain.keys import RoomKeys
from booking.domain.rules import STATUSES
from booking.engine import holds, specs
from booking.engine.cancel import booking_cancel
from strongroom.calls import FunctionSpec
from strongroom.lua_sources import library_text
from tests.booking_support import NOW, STAFF, claim, request

ROOT = Path(__file__).resolve().parents[3]
LUA = library_text(ROOT / "booking" / "lua" / "booking")


def lua_list(name: str) -> tuple[str, ...]:
    """A `local NAME = {'a', 'b'}` list of the booking library."""
    match = re.search(rf"^local {name} = \{{([^}}]*)\}}", LUA, re.M)
    assert match is not None, f"the booking library declares no {name}"
    return tuple(re.findall(r"'([a-z_]+)'", match.group(1)))


def lua_constant(name: str) -> str:
    match = re.search(rf"^local {name} = '?([0-9A-Za-z_]+)'?", LUA, re.M)
    assert match is not None, f"the booking library declares no {name}"
    return match.group(1)


@pytest.mark.parametrize("spec", specs.SPECS, ids=lambda s: s.name)
def test_each_function_takes_its_keys_and_arguments_in_the_order_python_sends_them(
    spec: FunctionSpec,
) -> None:
    assert lua_list(f"{spec.lua}_KEYS") == spec.keys
    assert lua_list(f"{spec.lua}_ARGS") == spec.args


def test_no_function_library_file_is_over_400_lines() -> None:
    files = [*ROOT.glob("*/lua/*.lua"), *ROOT.glob("*/lua/*/*.lua")]
    assert len(files) > 3
    long = {
        str(path.relative_to(ROOT)): n
        for path in files
        if (n := len(path.read_text().splitlines())) > 400
    }
    assert long == {}


def test_every_registered_function_has_a_call_spec() -> None:
    registered = set(re.findall(r"function_name = '(\w+)'", LUA))
    assert registered == {spec.name for spec in specs.SPECS}


def test_the_hold_value_and_the_stats_constants_are_the_same_on_both_sides() -> None:
    assert lua_list("HOLD_FIELDS") == formats.HOLD_FIELDS
    assert lua_constant("STATS_VERSION") == formats.STATS_VERSION
    assert int(lua_constant("DAY_WIDTH")) == formats.DAY_WIDTH


def test_a_call_with_a_missing_or_unknown_name_is_refused_before_it_is_sent() -> None:
    keys = dict.fromkeys(holds.HOLD_RELEASE.keys, "k")
    with pytest.raises(ValueError, match="owner"):
        holds.HOLD_RELEASE.call(keys=keys, args={"hold_id": "x"})
    with pytest.raises(ValueError, match="other"):
        holds.HOLD_RELEASE.call(keys=keys, args={"hold_id": "x", "owner": "1", "other": 2})
    assert holds.HOLD_RELEASE.call(keys=keys, args={"owner": "1", "hold_id": "x"}) == (
        ["k", "k", "k", "k"],
        ["x", "1"],
    )


def test_every_stats_field_the_functions_write_is_named_by_python(r: redis.Redis) -> None:
    kept = claim(r, request("B", hour_start=8, hour_end=12)).booking
    gone = claim(r, request("A", dates=(4,))).booking
    assert kept is not None and gone is not None
    booking_cancel(client=r, booking_id=gone.id, actor_id=STAFF, actor_is_staff=True, now=NOW)
    season = "2026-12"  # the claims' days are in December
    made = {kept.created_at, gone.created_at}
    names = {formats.stats_field(kind, season, cls) for kind in ("slots", "active") for cls in "AB"}
    names |= {formats.stats_field("status", season, c, s) for c in "AB" for s in STATUSES}
    names |= {
        formats.stats_field("made", season, c, m.astimezone(NOW.tzinfo).date().isoformat())
        for c in "AB"
        for m in made
    }
    written = set(r.hkeys(RoomKeys(kept.room).stats)) - {"v"}
    assert written and written <= names
    assert r.hget(RoomKeys(kept.room).stats, "v") == formats.STATS_VERSION
