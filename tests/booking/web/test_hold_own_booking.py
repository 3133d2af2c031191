"""A hold form sent again for slots the buyer has booked himself: the answer names his own
booking and links to it, never "someone was faster" as if a stranger took them; nothing is
written."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.conf import settings
from django.test import Client

from booking.engine.bookings import booking_get
from tests.booking_support import NOW, booked_id, day, snapshot
from tests.conftest import Someone, person_make, signed_in_session


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def _text(answer: Any) -> str:
    return html.unescape(answer.content.decode())


def _booked_through_the_pages(web: Client, form: dict[str, Any]) -> str:
    """Hold and review, then Book, as the buyer's browser does: the booking's id."""
    held = web.post("/book/hold/", {**form, "seen": "free"})
    assert held.status_code == 302 and held["Location"].startswith("/book/confirm/")
    confirm = web.get(held["Location"]).content.decode()
    fields = dict(re.findall(r'name="(hold_id|booking_id)" value="([^"]+)"', confirm))
    booked = web.post("/book/claim/", {**form, **fields})
    assert booked.status_code == 302 and booked["Location"].startswith("/book/done/")
    return str(booked["Location"]).split("/")[-2]


HOLD_FORMS: dict[str, dict[str, Any]] = {
    "A": {"cls": "A", "room": "7", "date": day(5).isoformat()},
    "B": {"cls": "B", "room": "8", "start": "10", "end": "12", "date": day(5).isoformat()},
    "C": {"cls": "C", "room": "9", "start": "10", "end": "12", "box": ["7", "8"],
          "date": day(5).isoformat()},
}  # fmt: skip


@pytest.mark.parametrize("cls", sorted(HOLD_FORMS))
def test_a_hold_form_sent_again_for_ones_own_booking_names_it(
    r: redis.Redis, client_for: Callable[[Someone], Client], buyer: Someone, cls: str
) -> None:
    web = client_for(buyer)
    form = HOLD_FORMS[cls]
    booking_id = _booked_through_the_pages(web, form)
    booking = booking_get(client=r, booking_id=booking_id)
    assert booking is not None
    before = snapshot(r)
    again = web.post("/book/hold/", {**form, "seen": "free"})
    page = _text(again)
    assert again.status_code == 409
    assert "Someone was faster" not in page
    assert "You have booked these slots yourself already: nothing more was held." in page
    assert f"You have booked this yourself: booking {booking.reference}." in page
    assert f'href="/book/done/{booking_id}/"' in page
    assert 'id="blocked-wait"' not in page
    assert snapshot(r) == before


def test_a_hold_form_for_slots_partly_anothers_is_still_someone_faster(
    r: redis.Redis,
    client_for: Callable[[Someone], Client],
    buyer: Someone,
    second_buyer: Someone,
) -> None:
    booked_id(r, buyer, cls="B", room=8, dates=[day(5)], hour_start=10, hour_end=11)
    booked_id(r, second_buyer, cls="B", room=8, dates=[day(5)], hour_start=11, hour_end=12)
    form = {**HOLD_FORMS["B"], "seen": "free"}
    answer = client_for(buyer).post("/book/hold/", form)
    page = _text(answer)
    assert answer.status_code == 409
    assert "Someone was faster: these slots are no longer free." in page
    assert "nothing more was held" not in page


def test_the_own_booking_answer_speaks_chinese(
    r: redis.Redis, client_for: Callable[[Someone], Client], buyer: Someone
) -> None:
    booking_id = booked_id(r, buyer, cls="A", room=7, dates=[day(5)])
    booking = booking_get(client=r, booking_id=booking_id)
    assert booking is not None
    answer = client_for(buyer).post(
        "/book/hold/", {**HOLD_FORMS["A"], "seen": "free"}, HTTP_ACCEPT_LANGUAGE="zh-hans"
    )
    page = _text(answer)
    assert answer.status_code == 409
    assert "这些时段您自己已经订下了：没有再为您暂留。" in page
    assert f"这是您自己订下的：订单 {booking.reference}。" in page
    assert f'href="/book/done/{booking_id}/"' in page


def test_the_htmx_answer_names_the_booking_in_the_panel(
    r: redis.Redis, client_for: Callable[[Someone], Client], buyer: Someone
) -> None:
    booking_id = booked_id(r, buyer, cls="A", room=7, dates=[day(5)])
    answer = client_for(buyer).post(
        "/book/hold/", {**HOLD_FORMS["A"], "seen": "free"}, HTTP_HX_REQUEST="true"
    )
    panel = _text(answer)
    assert answer.status_code == 409 and answer["HX-Retarget"] == "#booking-panel"
    assert "nothing more was held" in panel and f'href="/book/done/{booking_id}/"' in panel


def test_on_one_server_too(one_server: redis.Redis) -> None:
    """`make run`'s store: the claim function writes the buyer's index itself."""
    someone = person_make(one_server, "one_server_buyer")
    booking_id = booked_id(one_server, someone, cls="B", room=8, dates=[day(5)], hour_start=10,
                       hour_end=12)  # fmt: skip
    web = Client()
    web.cookies[settings.SESSION_COOKIE_NAME] = signed_in_session(one_server, someone)
    before = snapshot(one_server)
    answer = web.post("/book/hold/", {**HOLD_FORMS["B"], "seen": "free"})
    assert answer.status_code == 409
    assert f'href="/book/done/{booking_id}/"' in _text(answer)
    assert snapshot(one_server) == before
