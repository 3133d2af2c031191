"""Every function of the booking library that writes a key of a room sets the room's edition
in the same call (booking/README.md, "Kept pieces"): the store's MONITOR shows each FCALL and
then every command the function ran, so each call's writes are read as the server saw them.
The functions come from the library itself: a new function without a case here fails."""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from django.conf import settings

from booking.domain.keys import RoomKeys
from booking.domain.rules import hold_new_id
from booking.domain.window import SalesWindow
from booking.engine.cancel import booking_cancel
from booking.engine.closures import Closure, closure_add, closure_new_id, closure_remove
from booking.engine.desk import booking_handover
from booking.engine.holds import booking_hold, booking_hold_release
from booking.engine.maintenance import inventory_flush
from booking.engine.moves import booking_move
from booking.engine.moves_rooms import move_rooms
from booking.engine.owners import owner_forget
from booking.engine.pickup import booking_pickup
from booking.engine.priority import priority_grant
from booking.engine.stats import stats_rebuild
from booking.engine.unsure import claim_unsure_mark
from booking.engine.waits import Wait, wait_join
from booking.engine.waits_upkeep import waits_sweep
from booking.engine.window import window_set
from strongroom.decoders import text_list, text_or_none
from strongroom.lua_sources import library_text
from tests.booking_support import NOW, SHANGHAI, STAFF, claim, day, request
from tests.conftest import Someone

pytestmark = pytest.mark.single_node  # MONITOR of the one server

ROOT = Path(__file__).resolve().parents[3]
LIBRARY = library_text(ROOT / "booking" / "lua" / "booking")
REGISTERED = frozenset(re.findall(r"function_name = '(\w+)'", LIBRARY))
# Functions whose keys are the buyer's own (their waits list, their priority holds) or the
# staff's (the sales window), never a room's: they are called here too, and must write no key
# of a room.
NOT_A_ROOM = frozenset({"booking_wait_reserve", "booking_priority_keep", "booking_window_set"})
_ROOM_TAG = re.compile(r"\{room:(\d{3})\}")
_END = "edition-test-end"


@dataclass
class Call:
    """One FCALL as MONITOR saw it: the function, and the commands it ran."""

    function: str
    commands: list[str] = field(default_factory=list)


@dataclass
class Monitor:
    calls: list[Call] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def monitored(r: redis.Redis) -> Iterator[Monitor]:
    """Every FCALL the test makes, with the commands each ran (MONITOR on the store)."""
    watcher = redis.Redis.from_url(str(settings.REDIS_URL), decode_responses=True)
    seen = Monitor()
    ready = threading.Event()

    def listen() -> None:
        current: Call | None = None
        with watcher.monitor() as feed:
            ready.set()
            for entry in feed.listen():
                text = entry["command"]
                if entry["client_type"] == "lua":
                    if current is not None:
                        current.commands.append(text)
                    continue
                current = None
                name = text.split(" ", 2)
                if name[0].upper() == "FCALL":
                    current = Call(name[1])
                    seen.calls.append(current)
                elif name[0].upper() == "ECHO" and _END in text:
                    break
        seen.done.set()

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    ready.wait()
    # MONITOR starts with the next command the server runs: one that is surely after it.
    watcher.ping()
    yield seen
    r.echo(_END)
    seen.done.wait(30)
    watcher.close()


def write_commands(r: redis.Redis) -> frozenset[str]:
    """The server's own list of the commands that write (the ACL category @write)."""
    names = r.execute_command("COMMAND LIST", "FILTERBY", "ACLCAT", "write")
    return frozenset(str(n).upper() for n in names)


def rooms_written(call: Call, writes: frozenset[str]) -> set[str]:
    """The rooms (their hash tag) of every key a call's write commands name."""
    return {
        room
        for command in call.commands
        if command.split(" ", 1)[0].upper() in writes
        for room in _ROOM_TAG.findall(command)
    }


def editions_set(call: Call) -> set[str]:
    """The rooms whose edition the call set."""
    return {
        room
        for command in call.commands
        if command.split(" ", 1)[0].upper() == "SET"
        for room in _ROOM_TAG.findall(command)
        if command.split(" ")[1] == RoomKeys(int(room)).edition
    }


def every_function_called(r: redis.Redis, buyer: Someone, second: Someone) -> None:
    """One case for each function of the library, each one that writes."""
    mine, other = str(buyer.id), str(second.id)
    # claim, hold, release; a wait, its place on the buyer's list; the cancel that frees it
    made = claim(r, request("A", room=7, dates=(3,)), owner=mine).booking
    assert made is not None
    # a claim whose WAITAOF fell short on one server, marked so
    assert claim_unsure_mark(client=r, booking_id=made.id, now=NOW)
    held = booking_hold(
        client=r, owner_id=other, hold_id=hold_new_id(room=7), now=NOW,
        request=request("B", room=7, dates=(4,), hour_start=8, hour_end=10),
    )  # fmt: skip
    assert held.ok and held.hold is not None
    assert booking_hold_release(client=r, owner_id=other, hold_id=held.hold.id)
    assert wait_join(client=r, owner_id=other, wait=Wait(7, "A", day(3)), now=NOW) == "ok"
    assert booking_cancel(
        client=r, booking_id=made.id, actor_id=mine, actor_is_staff=False, now=NOW
    ).ok
    # the mail sender grants the waiter the priority hold the cancel placed for them (their
    # own slot first, then the hold made theirs in the room)
    (priority_hold,) = text_list(r.hkeys(RoomKeys(7).holds))
    granted = priority_grant(client=r, person_id=second.id, hold_id=priority_hold, now=NOW)
    assert granted == "granted"
    # the sweep: a hold that expired tells its waiter
    start = dt.datetime.now(tz=dt.UTC)
    sweep = request("B", room=9, dates=(8,), hour_start=8, hour_end=12)
    assert booking_hold(
        client=r, owner_id=mine, request=sweep, hold_id=hold_new_id(room=9), now=start
    ).ok
    assert wait_join(client=r, owner_id=other, wait=Wait(9, "B", day(8), (9, 10)), now=start)
    assert waits_sweep(client=r, now=start + dt.timedelta(minutes=11)) == 1
    # moves: within the room, across rooms, and one the old room refuses (abort, release)
    moving = claim(r, request("B", room=7, dates=(5,), hour_start=8, hour_end=10), owner=mine)
    assert moving.booking is not None
    later = request("B", room=7, dates=(5,), hour_start=10, hour_end=12)
    assert booking_move(
        client=r, booking_id=moving.booking.id, request=later, actor_id=mine,
        actor_is_staff=False, now=NOW,
    ).ok  # fmt: skip
    elsewhere = request("B", room=8, dates=(5,), hour_start=10, hour_end=12)
    assert booking_move(
        client=r, booking_id=moving.booking.id, request=elsewhere, actor_id=mine,
        actor_is_staff=False, now=NOW,
    ).ok  # fmt: skip
    gone = claim(r, request("A", room=11, dates=(6,)), owner=mine).booking
    assert gone is not None
    # Another buyer's move of it (the old room refuses: forbidden), then a cancel.
    refused = move_rooms(
        r, gone.id, request("A", room=12, dates=(6,)), other, False, NOW, "edition-move-01", mine
    )
    assert not refused.ok and refused.outcome == "forbidden"
    booking_cancel(client=r, booking_id=gone.id, actor_id=STAFF, actor_is_staff=True, now=NOW)
    # pickup with the code, hand-over at the desk
    on_the_day = dt.datetime(2026, 12, 3, 9, 0, tzinfo=SHANGHAI)
    picked = claim(r, request("A", room=10, dates=(3,)), owner=mine).booking
    handed = claim(r, request("B", room=10, dates=(3,), hour_start=8, hour_end=12)).booking
    assert picked is not None and handed is not None
    assert booking_pickup(client=r, room=10, code=picked.pickup_code(), now=on_the_day).ok
    assert booking_handover(
        client=r, booking_id=handed.id, actor_id=STAFF, now=on_the_day, request_id="edition-h-01"
    ).ok
    # staff: closures in and out, the stats rebuilt, an account forgotten, the inventory flushed
    closure = Closure(closure_new_id(), (7, 8), day(20), day(21), None, "repairs")
    closure_add(client=r, actor_id=STAFF, closure=closure)
    closure_remove(client=r, actor_id=STAFF, closure_id=closure.id)
    stats_rebuild(client=r, rooms=[7])
    claim(r, request("A", room=13, dates=(9,)), owner=other)
    owner_forget(client=r, owner_id=other, now=NOW)
    claim(r, request("A", room=14, dates=(9,)))
    inventory_flush(client=r, actor_id=STAFF, reason="end of season")
    window_set(client=r, actor_id=STAFF, window=SalesWindow(days=20))


def test_every_function_that_writes_a_room_sets_its_edition_in_the_same_call(
    r: redis.Redis, monitored: Monitor, buyer: Someone, second_buyer: Someone
) -> None:
    every_function_called(r, buyer, second_buyer)
    r.echo(_END)
    assert monitored.done.wait(30)
    writes = write_commands(r)
    called = {call.function for call in monitored.calls if call.function.startswith("booking_")}
    assert called == REGISTERED, "a function of the library without a case here"
    writing: set[str] = set()
    for call in monitored.calls:
        rooms = rooms_written(call, writes)
        if rooms:
            writing.add(call.function)
        assert rooms <= editions_set(call), (call.function, rooms, call.commands)
    assert writing == REGISTERED - NOT_A_ROOM


def test_each_edition_is_above_the_last(r: redis.Redis) -> None:
    key = RoomKeys(7).edition
    editions = []
    for n in (3, 4, 5):
        claim(r, request("A", room=7, dates=(n,)))
        editions.append(int(text_or_none(r.get(key)) or 0))
    assert editions == sorted(set(editions))
    r.set(key, str(editions[-1] + 10**9))  # a clock that went back: still above the last
    claim(r, request("A", room=7, dates=(6,)))
    assert int(text_or_none(r.get(key)) or 0) == editions[-1] + 10**9 + 1
