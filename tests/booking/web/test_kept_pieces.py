"""Kept pieces are never stale: random writes of a room (claims, holds, releases, cancels,
pickups, closures) and the clock running past holds' ends, interleaved with reads of the
booking panel and the month calendar by different buyers in both languages; every read with
the kept pieces must equal a fresh render with keeping off."""

from __future__ import annotations

import datetime as dt
import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
import time_machine
from django.utils import translation
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from booking.domain.rules import booking_new_id, hold_new_id
from booking.engine.cancel import booking_cancel
from booking.engine.claims import booking_claim
from booking.engine.closures import Closure, closure_add, closure_new_id, closure_remove
from booking.engine.holds import booking_hold, booking_hold_release
from booking.engine.pickup import booking_pickup
from booking.web import pick_panel
from booking.web.forms import Choices
from booking.web.kept import kept_clear
from tests.booking_support import NOW, SHANGHAI, STAFF, claim, day, request

ROOM = 7
OWNERS = ("101", "102", "103")
VIEWERS = (None, "101", "102")
DAYS = (3, 4, 5, 6)
DECEMBER = dt.date(2026, 12, 1)


@dataclass
class World:
    """What the writes made so far: bookings and live holds, and the site's clock."""

    now: dt.datetime = NOW
    bookings: list[tuple[str, str, int, int]] = field(default_factory=list)  # id, code, day, hour
    holds: list[tuple[str, str]] = field(default_factory=list)  # (owner, hold id)
    closures: list[str] = field(default_factory=list)


def bookable(world: World) -> list[int]:
    """The December days still at least a day ahead on the world's clock."""
    today = world.now.astimezone(SHANGHAI).date()
    return [d for d in DAYS if day(d) > today]


def slot(rng: random.Random, days: list[int]) -> dict[str, object]:
    start = rng.choice((8, 9, 10))
    return {"dates": (rng.choice(days),), "hour_start": start, "hour_end": start + 2,
            "boxes": [rng.choice((1, 2))]}  # fmt: skip


def write(r: redis.Redis, world: World, kind: str, rng: random.Random) -> None:
    """One write of the room, of `kind`."""
    days = bookable(world)
    if kind == "claim" and days:
        wanted = request("C", room=ROOM, **slot(rng, days))
        made = booking_claim(client=r, owner_id=rng.choice(OWNERS), request=wanted,
                             booking_id=booking_new_id(room=ROOM), now=world.now)  # fmt: skip
        if made.booking is not None:
            assert wanted.hours is not None
            world.bookings.append((made.booking.id, made.booking.pickup_code(),
                                   wanted.dates[0].day, wanted.hours[0]))  # fmt: skip
    elif kind == "hold" and days:
        owner, hold_id = rng.choice(OWNERS), hold_new_id(room=ROOM)
        wanted = request("C", room=ROOM, **slot(rng, days))
        held = booking_hold(client=r, owner_id=owner, request=wanted, hold_id=hold_id,
                            now=world.now)  # fmt: skip
        if held.ok:
            world.holds.append((owner, hold_id))
    elif kind == "release" and world.holds:
        owner, hold_id = world.holds.pop(rng.randrange(len(world.holds)))
        booking_hold_release(client=r, owner_id=owner, hold_id=hold_id)
    elif kind == "cancel" and world.bookings:
        booking_id, *_rest = world.bookings.pop(rng.randrange(len(world.bookings)))
        booking_cancel(client=r, booking_id=booking_id, actor_id=STAFF, actor_is_staff=True,
                       now=world.now)  # fmt: skip
    elif kind == "pickup" and world.bookings:
        # On the booking's day, in its hours (the clock only goes forward).
        _booking_id, code, on, hour = rng.choice(world.bookings)
        world.now = max(world.now, dt.datetime(2026, 12, on, hour, 30, tzinfo=SHANGHAI))
        booking_pickup(client=r, room=ROOM, code=code, now=world.now)
    elif kind == "close" and days:
        one = day(rng.choice(days))
        hours = rng.choice((None, (8, 10)))
        closure = Closure(closure_new_id(), (ROOM,), one, one, hours, "repairs")
        world.closures.append(closure_add(client=r, actor_id=STAFF, closure=closure).id)
    elif kind == "open" and world.closures:
        closure_id = world.closures.pop(rng.randrange(len(world.closures)))
        closure_remove(client=r, actor_id=STAFF, closure_id=closure_id)
    elif kind == "time":
        # Minutes to past a hold's end (holds last STRONGROOM_HOLD_SECONDS, 10 minutes).
        world.now += dt.timedelta(seconds=rng.choice((30, 240, 601, 900)))


@contextmanager
def keeping(on: bool) -> Iterator[None]:
    panels, months = pick_panel.KEPT_PANELS, pick_panel.KEPT_MONTHS
    before = (panels.enabled, months.enabled)
    panels.enabled = months.enabled = on
    try:
        yield
    finally:
        panels.enabled, months.enabled = before


def shown(r: redis.Redis, choices: Choices, viewer: str | None, now: dt.datetime) -> object:
    """Everything the panel and the calendar show of `choices` to `viewer`."""
    panel = pick_panel.panel_build(client=r, choices=choices, owner_id=viewer, now=now)
    month = pick_panel.month_build(client=r, choices=choices, owner_id=viewer, now=now)
    pickers = [str(panel.pickers_html(choices, signed_in=who)) for who in (False, True)]
    # Kept and given to everyone: nothing of a person (the hold form with its token is not here)
    assert not any("csrfmiddlewaretoken" in html for html in pickers)
    return (
        str(panel.calendar_html(choices)), str(panel.hour_cells), str(panel.box_cells),
        panel.blocked, panel.stamp, str(month.html(choices)), pickers,
    )  # fmt: skip


def a_read(rng: random.Random) -> tuple[Choices, str | None, str]:
    when = day(rng.choice(DAYS))
    start = rng.choice((8, 9, 10))
    choices = rng.choice(
        (
            Choices(cls="C", room=ROOM, month=DECEMBER),
            Choices(cls="C", room=ROOM, dates=(when,), start=start, end=start + 2, month=DECEMBER),
            Choices(
                cls="C",
                room=ROOM,
                dates=(when,),
                start=start,
                end=start + 2,
                boxes=(1,),
                month=DECEMBER,
            ),
        )
    )
    return choices, rng.choice(VIEWERS), rng.choice(("en", "zh-hans"))


WRITES = ("claim", "hold", "release", "cancel", "pickup", "close", "open", "time")


@pytest.mark.long
@hypothesis_settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(st.sampled_from(WRITES), min_size=4, max_size=14), seed=st.integers(0, 99))
def test_a_kept_piece_always_equals_a_fresh_render(
    r: redis.Redis, steps: list[str], seed: int
) -> None:
    r.flushall()
    kept_clear()
    rng, world = random.Random(seed), World()
    for kind in steps:
        write(r, world, kind, rng)
        for _ in range(3):
            choices, viewer, language = a_read(rng)
            with time_machine.travel(world.now, tick=False), translation.override(language):
                with keeping(True):
                    kept = shown(r, choices, viewer, world.now)
                with keeping(False):
                    fresh = shown(r, choices, viewer, world.now)
            assert kept == fresh, (kind, choices, viewer, language)


def test_a_piece_is_kept_while_the_room_is_unchanged_and_built_again_after_a_write(
    r: redis.Redis,
) -> None:
    claim(r, request("C", room=ROOM, dates=(3,), hour_start=8, hour_end=10, boxes=[1]))
    choices = Choices(cls="C", room=ROOM, month=DECEMBER)
    first = pick_panel.month_build(client=r, choices=choices, owner_id=None, now=NOW)
    assert pick_panel.month_build(client=r, choices=choices, owner_id=None, now=NOW) is first
    claim(r, request("C", room=ROOM, dates=(4,), hour_start=8, hour_end=10, boxes=[1]))
    again = pick_panel.month_build(client=r, choices=choices, owner_id=None, now=NOW)
    assert again is not first
    assert pick_panel.month_build(client=r, choices=choices, owner_id=None, now=NOW) is again


def test_a_buyer_with_a_hold_in_the_room_gets_a_panel_of_their_own(r: redis.Redis) -> None:
    """Their own hold is free for them: the others' kept panel (it shows the hold) is never
    theirs, and theirs is never kept for the others."""
    wanted = request("C", room=ROOM, dates=(3,), hour_start=8, hour_end=10, boxes=[1])
    assert booking_hold(
        client=r, owner_id="101", request=wanted, hold_id=hold_new_id(room=ROOM), now=NOW
    ).ok
    choices = Choices(cls="C", room=ROOM, dates=(day(3),), start=8, end=10, boxes=(1,),
                      month=DECEMBER)  # fmt: skip
    seen = {
        who: pick_panel.panel_build(client=r, choices=choices, owner_id=who, now=NOW)
        for who in (None, "101", "102")
    }
    assert seen[None] is seen["102"] and seen[None].blocked
    assert seen["101"] is not seen[None] and not seen["101"].blocked
    again = pick_panel.panel_build(client=r, choices=choices, owner_id="101", now=NOW)
    assert again is not seen["101"]


def test_readers_of_a_new_edition_at_the_same_moment_wait_for_one_build(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seven refusals of a race read the room's new edition together: one builds its panel,
    the others wait for it and get the very same one."""
    claim(r, request("C", room=ROOM, dates=(3,), hour_start=8, hour_end=10, boxes=[1]))
    choices = Choices(cls="C", room=ROOM, dates=(day(3),), start=8, end=10, boxes=(1,),
                      month=DECEMBER)  # fmt: skip
    built, together = [], threading.Barrier(8)
    real = pick_panel._panel

    def slow_panel(*args: Any) -> pick_panel.Panel:
        built.append(1)
        time.sleep(0.2)  # the others read the room meanwhile
        return real(*args)

    def refused() -> pick_panel.Panel:
        together.wait()
        return pick_panel.panel_build(client=r, choices=choices, owner_id=None, now=NOW)

    monkeypatch.setattr(pick_panel, "_panel", slow_panel)
    with ThreadPoolExecutor(8) as pool:
        panels = list(pool.map(lambda _: refused(), range(8)))
    assert len(built) == 1 and all(p is panels[0] for p in panels) and panels[0].blocked
