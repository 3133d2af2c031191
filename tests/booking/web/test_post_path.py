"""The booking POST's path through the modules (docs/architecture.md, "The booking POST's
path"), recorded with `sys.setprofile` while the real view books: each step module (the web and
engine parts of booking, and accounts) is entered once, in the documented order. The domain's
values and rules (booking.domain) and the platform (strongroom: keys, clock, store calls) are
the bottom layers that the steps consult, as often as each needs."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.rules import booking_new_id
from tests.booking_support import NOW, day

STEPS = ("booking.web.", "booking.engine.", "accounts.")


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def steps_entered(call: Callable[[], Any]) -> list[str]:
    """The step modules entered from another module while `call` runs, in order (a module
    calling itself, or a step calling a bottom layer, is not an entry)."""
    entered: list[str] = []

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        module = str(frame.f_globals.get("__name__", ""))
        if not module.startswith(STEPS):
            return
        caller = str(frame.f_back.f_globals.get("__name__", "")) if frame.f_back else ""
        if caller != module and (not entered or entered[-1] != module):
            entered.append(module)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return entered


def test_the_booking_post_enters_each_step_module_once(
    r: redis.Redis, client_for: Callable[[Any], Client], buyer: Any
) -> None:
    client = client_for(buyer)
    warm = {"cls": "A", "room": "22", "date": day(5).isoformat(),
            "booking_id": booking_new_id(room=22)}  # fmt: skip
    assert client.post("/book/claim/", warm).status_code == 302  # every module imported
    form = {**warm, "room": "21", "booking_id": booking_new_id(room=21)}
    answers: list[Any] = []
    path = steps_entered(lambda: answers.append(client.post("/book/claim/", form)))
    assert answers[0].status_code == 302 and "/book/done/" in answers[0]["Location"]
    # From the view on: the middleware before it is the site's, not the booking's.
    path = path[path.index("booking.web.pick") :]
    print(" -> ".join(path))
    twice = sorted({m for m in path if path.count(m) > 1})
    assert not twice, path
    # The documented order (others may come between: the person's record, the pace, the
    # indexes on a cluster).
    documented = ["booking.web.pick", "booking.web.owner", "accounts.access", "booking.web.forms",
                  "booking.engine.claims", "booking.web.pick_answers"]  # fmt: skip
    assert [m for m in path if m in documented] == documented, path
    assert path[-1] == "booking.web.pick_answers", path
