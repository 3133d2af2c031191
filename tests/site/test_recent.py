"""Answers a worker keeps (strongroom/recent.py): with `one_renews`, only the first caller to
find an answer too old computes the next one, and the others get the old one meanwhile; with
`Flights`, callers who need the same answer at once wait for one computation."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from strongroom.recent import Flights, Recent


def kept_old(key: str) -> tuple[list[float], Recent[str]]:
    """ "first" kept under `key` at 0 s, and the clock (a one-item list) at 1.5 s: too old."""
    clock = [0.0]
    kept: Recent[str] = Recent(size=4, clock=lambda: clock[0])
    kept.put(key, "first")
    clock[0] = 1.5
    return clock, kept


def renewing(kept: Recent[str], key: str) -> tuple[str, float] | None:
    return kept.get(key, max_age_ms=1000, one_renews=True)


def test_one_caller_renews_an_old_answer_while_the_others_get_it_as_it_was() -> None:
    _clock, kept = kept_old("map")
    assert renewing(kept, "map") is None  # this caller renews
    assert renewing(kept, "map") == ("first", 1.5)
    kept.put("map", "second")
    assert renewing(kept, "map") == ("second", 0.0)


def test_a_renewal_that_never_comes_is_left_to_the_next_caller_after_another_max_age() -> None:
    clock, kept = kept_old("map")
    assert renewing(kept, "map") is None  # renews, then fails
    clock[0] = 2.4
    assert renewing(kept, "map") == ("first", 2.4)
    clock[0] = 2.5  # a second since that renewal began: the next caller renews
    assert renewing(kept, "map") is None
    assert renewing(kept, "map") == ("first", 2.5)


def test_without_one_renews_an_old_answer_is_forgotten_for_every_caller() -> None:
    _clock, kept = kept_old("page")
    assert kept.get("page", max_age_ms=1000) is None
    assert kept.get("page", max_age_ms=1000) is None
    assert kept.get("page") is None  # gone, whatever its age


def test_what_falls_out_of_the_memory_is_no_longer_being_renewed() -> None:
    _clock, kept = kept_old("a")
    assert renewing(kept, "a") is None
    for key in "bcde":  # four newer answers push "a" out
        kept.put(key, key)
    assert renewing(kept, "a") is None
    assert not kept._renewing


def test_callers_who_need_the_same_answer_at_once_wait_for_one_computation() -> None:
    kept: dict[str, str] = {}
    computed: list[int] = []
    flights = Flights()
    started = threading.Barrier(8)

    def compute() -> str:
        computed.append(1)
        time.sleep(0.2)  # the others arrive meanwhile
        kept["panel"] = "rendered"
        return kept["panel"]

    def ask() -> str:
        started.wait()
        return flights.once("panel", lambda: kept.get("panel"), compute)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: ask(), range(8)))
    assert answers == ["rendered"] * 8 and len(computed) == 1


def test_when_the_one_computing_fails_the_waiting_compute_their_own() -> None:
    flights = Flights(wait_s=3600.0)  # were they not woken, they would wait an hour
    inside, looked, failed, got = threading.Event(), threading.Event(), threading.Event(), []

    def look() -> str | None:
        looked.set()
        return None

    def failing() -> str:
        inside.set()
        failed.wait()
        raise RuntimeError("the store went away")

    def first() -> None:
        with pytest.raises(RuntimeError):
            flights.once("panel", lambda: None, failing)

    def second() -> None:
        got.append(flights.once("panel", look, lambda: "mine"))

    computing, waiting = threading.Thread(target=first), threading.Thread(target=second)
    computing.start()
    inside.wait()
    waiting.start()
    looked.wait()  # it found nothing and goes on to wait for the first
    failed.set()
    for thread in (computing, waiting):
        thread.join(60)
    assert got == ["mine"] and not waiting.is_alive()
