"""A server that lost the function libraries (a new or restarted server, a new primary after a
failover) gets them again on the first call that needs them, whichever way the call is sent:
one FCALL, a pipeline of them, a durable call, or a pipeline of a call and reads. The one home of
that retry is `strongroom.libraries.with_functions`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from accounts.gates import window_gates
from booking.domain.rules import hold_new_id
from booking.engine.holds import booking_hold
from booking.engine.stats import stats_rebuild
from strongroom import libraries, lua_sources, store
from tests.booking_support import BUYER, NOW, claim, request

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("strongroom", "accounts", "booking", "catalog", "dashboard")


@pytest.fixture
def lost(r: redis.Redis) -> Iterator[redis.Redis]:
    """The store with no function libraries (loaded again afterwards, whatever happened)."""
    for node in store.primaries(r):
        node.function_flush()
    yield r
    store.load_functions(r)


def _libraries(client: redis.Redis) -> int:
    return len(store.primaries(client)[0].function_list())


CALLS: dict[str, Callable[[redis.Redis], object]] = {
    "fcall": lambda c: libraries.fcall(c, "booking_wait", ["k"] * 4, [""] * 10),
    "fcalls in a pipeline": lambda c: window_gates(client=c, gates=[("sr:t:gate", 3)], window_ms=9),
    "durable fcall": lambda c: claim(c, request("A")),
    "fcall and a read in a pipeline": lambda c: booking_hold(
        client=c,
        owner_id=BUYER,
        request=request("B", hour_start=8, hour_end=9),
        hold_id=hold_new_id(room=7),
        now=NOW,
    ),
}


@pytest.mark.parametrize("send", CALLS.values(), ids=list(CALLS))
def test_a_call_on_a_server_without_the_libraries_loads_them_and_goes_through(
    lost: redis.Redis, send: Callable[[redis.Redis], object]
) -> None:
    assert _libraries(lost) == 0
    send(lost)
    assert _libraries(lost) == len(lua_sources.function_sources())


def test_a_rebuild_that_reads_before_it_calls_loads_the_libraries_too(r: redis.Redis) -> None:
    assert claim(r, request("A")).ok
    for node in store.primaries(r):
        node.function_flush()
    try:
        assert stats_rebuild(client=r, rooms=[7]) == 1
    finally:
        store.load_functions(r)


def test_only_the_store_knows_what_a_missing_function_looks_like() -> None:
    places = [
        str(path.relative_to(ROOT))
        for package in PRODUCT
        for path in sorted((ROOT / package).rglob("*.py"))
        if "Function not found" in path.read_text(encoding="utf-8")
    ]
    assert places == ["strongroom/libraries.py"]
