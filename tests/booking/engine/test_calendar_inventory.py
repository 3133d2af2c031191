"""Inventory addressed by calendar date: changing what is on sale (the sales window: starting
earlier, later; longer, shorter; fixed days to rolling and back) on a store that holds
bookings, holds, waits and statistics sells nothing twice, frees nothing, and moves no hold,
wait or figure to another day.
Runs on one server and (STRONGROOM_TEST_STORE=cluster) on the 3-primary cluster.

The control at the end keeps the layout this replaced (bitmaps named by the season's first day,
days counted from it) and shows the same window change moving a booked slot and a wait."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis
import time_machine
from django.test import override_settings

from booking.domain.keys import RoomKeys
from booking.domain.parser import slot_request_parse
from booking.domain.rules import booking_new_id, hold_new_id
from booking.engine.bookings import booking_get, hold_get
from booking.engine.claims import booking_claim
from booking.engine.holds import booking_hold
from booking.engine.stats import season_stats
from booking.engine.waits import Wait, wait_join, waits_of
from booking.engine.waits_upkeep import waits_sweep
from tests.booking_support import BUYER, NOW, SECOND_BUYER

THIRD_BUYER = "103"
D = dt.date
# The window the store is written under, and the changes made to it afterwards (None, None:
# rolling, from tomorrow to 60 days ahead; the clock stands at NOW, November 21). Every date
# the test touches (December 28 to January 2) is inside all of them.
Bounds = tuple[dt.date | None, dt.date | None]
FIRST: Bounds = (D(2026, 12, 15), D(2027, 1, 15))
CHANGES: dict[str, Bounds] = {
    "earlier": (D(2026, 12, 1), D(2027, 1, 15)),
    "later": (D(2026, 12, 20), D(2027, 1, 31)),
    "longer": (D(2026, 12, 1), D(2027, 3, 31)),
    "shorter": (D(2026, 12, 25), D(2027, 1, 5)),
    "rolling": (None, None),
    "fixed again": FIRST,
}
# What the test watches: class A room 10 on Dec 28; class C room 5 box 3 08-10 on Dec 31 and
# Jan 1 (one booking over the month's end); class B room 7 09-11 on Jan 2 (held).
SOLD_A = {"cls": "A", "room": 10, "dates": [D(2026, 12, 28)]}
SOLD_C = {
    "cls": "C", "room": 5, "dates": [D(2026, 12, 31), D(2027, 1, 1)], "hour_start": 8,
    "hour_end": 10, "boxes": "3",
}  # fmt: skip
HELD_B = {"cls": "B", "room": 7, "dates": [D(2027, 1, 2)], "hour_start": 9, "hour_end": 11}
WATCHED = (D(2026, 12, 25), D(2027, 1, 5))  # the figures compared: every window holds these


@contextmanager
def window(first: dt.date | None, last: dt.date | None) -> Iterator[None]:
    with (
        time_machine.travel(NOW, tick=False),
        override_settings(
            STRONGROOM_SEASON_START=first, STRONGROOM_SEASON_END=last, STRONGROOM_SELL_DAYS=60
        ),
    ):
        yield


def take(client: redis.Redis, owner: str, part: dict[str, Any]) -> Any:
    req = slot_request_parse(now=NOW, **part)
    return booking_claim(
        client=client, owner_id=owner, request=req, booking_id=booking_new_id(room=req.room),
        now=NOW,
    )  # fmt: skip


def store_with_everything(client: redis.Redis) -> dict[str, str]:
    """Under FIRST: two bookings (one over a month's end), a hold, two waits."""
    with window(*FIRST):
        a, c = take(client, BUYER, SOLD_A), take(client, BUYER, SOLD_C)
        assert a.ok and c.ok
        held = booking_hold(
            client=client, owner_id=SECOND_BUYER, request=slot_request_parse(now=NOW, **HELD_B),
            hold_id=hold_new_id(room=7), now=NOW,
        )  # fmt: skip
        assert held.ok and held.hold is not None
        for wait in (
            Wait(10, "A", D(2026, 12, 28)),
            Wait(5, "C", D(2027, 1, 1), (8, 10), 3),
        ):
            assert wait_join(client=client, owner_id=SECOND_BUYER, wait=wait, now=NOW) == "ok"
        return {"a": a.booking.id, "c": c.booking.id, "hold": held.hold.id}


def seen(client: redis.Redis, ids: dict[str, str]) -> dict[str, object]:
    """Everything a window change must leave as it is, read through the site's own code."""
    refused = {}
    for name, part in (("A", SOLD_A), ("C", SOLD_C), ("B", HELD_B)):
        result = take(client, THIRD_BUYER, part)
        refused[name] = (result.ok, sorted({(s.date, s.held) for s in result.taken}))
    hold = hold_get(client=client, hold_id=ids["hold"], now=NOW)
    waits = sorted(
        (w.wait.room, w.wait.cls, w.wait.date, w.told)
        for w in waits_of(client=client, owner_id=SECOND_BUYER, now=NOW)
    )
    figures: dict[str, object] = {}
    stats = season_stats(client=client, now=NOW)
    for cls_stats in stats.classes:
        figures[cls_stats.cls] = {
            day.date: day.booked
            for day in cls_stats.occupancy.days
            if WATCHED[0] <= day.date <= WATCHED[1]
        }
        figures[cls_stats.cls + " statuses"] = cls_stats.statuses
    records = {
        name: (b.dates, b.status)
        for name in ("a", "c")
        if (b := booking_get(client=client, booking_id=ids[name])) is not None
    }
    return {
        "refused": refused,
        "hold": hold.request.dates if hold else None,
        "waits": waits,
        "figures": figures,
        "records": records,
        "told by the sweep": waits_sweep(client=client, now=NOW),
    }


def test_changing_the_window_sells_nothing_twice_and_moves_nothing(r: redis.Redis) -> None:
    ids = store_with_everything(r)
    with window(*FIRST):
        before = seen(r, ids)
    # What `before` says is the store as written: sold and held slots are refused to a third
    # buyer, on their own dates; the hold and the waits keep theirs; the figures count them.
    assert before["refused"] == {
        "A": (False, [(D(2026, 12, 28), False)]),
        "C": (False, [(D(2026, 12, 31), False), (D(2027, 1, 1), False)]),
        "B": (False, [(D(2027, 1, 2), True)]),
    }
    assert before["hold"] == (D(2027, 1, 2),)
    assert before["waits"] == [(5, "C", D(2027, 1, 1), False), (10, "A", D(2026, 12, 28), False)]
    figures = before["figures"]
    assert isinstance(figures, dict)
    assert figures["A"][D(2026, 12, 28)] == 1 and figures["C"][D(2027, 1, 1)] == 2
    assert sum(figures["C"].values()) == 4 and figures["B"][D(2027, 1, 2)] == 0
    assert before["told by the sweep"] == 0
    for name, (first, last) in CHANGES.items():
        with window(first, last):
            assert seen(r, ids) == before, f"the window changed {name}"


# --- The control: the layout this replaced -------------------------------------------------


def old_bit(first_day: dt.date, date: dt.date) -> tuple[str, int]:
    """Where the old layout kept class A of room 10 on `date`: a bitmap named by the season's
    first day, the bit at the day's number counted from it (what `season_key`/`season_day`
    did)."""
    key = RoomKeys(10).inventory("A", first_day.isoformat())
    return key, (date - first_day).days


def old_wait_date(first_day: dt.date, member: str) -> dt.date:
    """A wait's date as the old layout read it: its stored day number counted from the season's
    first day."""
    return first_day + dt.timedelta(days=int(member.split("|")[2]))


@pytest.mark.parametrize("name", ["earlier", "later", "rolling"])
def test_control_the_old_season_offsets_move_a_sold_slot_and_a_wait(
    r: redis.Redis, name: str
) -> None:
    """Written the old way under FIRST, read the old way under a changed window: the booked
    day reads free (a second sale) and the wait has moved: what the test above refuses."""
    sold, start = D(2026, 12, 28), FIRST[0]
    assert start is not None
    key, bit = old_bit(start, sold)
    r.setbit(key, bit, 1)
    member = f"{SECOND_BUYER}|A|{(sold - start).days}|0|0|0"
    # A rolling window's first day is tomorrow (November 22 at NOW).
    first = CHANGES[name][0] or NOW.date() + dt.timedelta(days=1)
    key_now, bit_now = old_bit(first, sold)
    assert r.getbit(key_now, bit_now) == 0, "the booked day reads free"
    assert old_wait_date(first, member) != sold, "the wait has moved to another day"
