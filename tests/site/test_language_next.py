"""The language switch on a page that answers a form (its `next`): the page the buyer is on, to
which a GET comes back (the kiosk, the booking page of the choice, the move page), never the
form's POST-only address, never another site, and nothing secret (no code, no token) in it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.codes import code_display
from booking.domain.rules import booking_new_id
from tests.booking_support import NOW, claim, request
from tests.conftest import Someone

CHOICE = {"cls": "A", "room": "7", "date": "2026-12-03"}
CHOICE_PAGE = "/book/?cls=A&room=7&date=2026-12-03"


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def language_next(answer: Any) -> str:
    """The `next` of the header's language form (unescaped)."""
    page = answer.content.decode()
    form = page[page.index('class="inline lang-switch"') :]
    match = re.search(r'name="next" type="hidden" value="([^"]*)"', form)
    assert match, "no language form"
    return match.group(1).replace("&amp;", "&")


def test_the_kiosk_s_answer_switches_language_back_to_the_kiosk_without_the_code(
    r: redis.Redis, buyer: Someone
) -> None:
    booking = claim(r, request("A", room=7), owner=str(buyer.id)).booking
    assert booking is not None
    kiosk = Client()
    code = code_display(booking.pickup_code())
    for sent in ({"room": "7", "code": code}, {"room": "7", "code": "ABCDE-23456"}):
        answer = kiosk.post("/book/pickup/", sent)
        assert answer.status_code == 200
        assert language_next(answer) == "/book/pickup/"
    # A query put on the form's address (a code in it, say) is not carried into `next`.
    answer = kiosk.post(f"/book/pickup/?code={code}", {"room": "7", "code": code})
    assert language_next(answer) == "/book/pickup/"


def test_a_refused_hold_and_a_refused_claim_switch_back_to_the_booking_page_of_the_choice(
    r: redis.Redis, buyer: Someone, second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:  # fmt: skip
    assert claim(r, request("A", room=7), owner=str(second_buyer.id)).ok  # taken
    browser = client_for(buyer)
    held = browser.post("/book/hold/", CHOICE)
    assert held.status_code == 409
    assert language_next(held) == CHOICE_PAGE
    booked = browser.post("/book/claim/", {**CHOICE, "booking_id": booking_new_id(room=7)})
    assert booked.status_code == 409
    assert language_next(booked) == CHOICE_PAGE
    # Whatever the Referer says, no other site: the choice's page still.
    foreign = browser.post("/book/hold/", CHOICE, HTTP_REFERER="http://evil.example/x")
    assert language_next(foreign) == CHOICE_PAGE


def test_a_refused_move_switches_back_to_the_move_page(
    r: redis.Redis, buyer: Someone, second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:  # fmt: skip
    mine = claim(r, request("B", hour_start=8, hour_end=10), owner=str(buyer.id)).booking
    assert mine is not None
    taken = request("B", dates=(4,), hour_start=8, hour_end=10)
    assert claim(r, taken, owner=str(second_buyer.id)).ok
    data = {"date": ["2026-12-04"], "hour_start": "9", "hour_end": "11"}
    answer = client_for(buyer).post(f"/book/mine/{mine.id}/move/", data)
    assert answer.status_code == 409
    assert language_next(answer) == f"/book/mine/{mine.id}/move/"


def test_an_answer_at_an_address_with_a_token_does_not_copy_the_token(r: redis.Redis) -> None:
    """A reset link's token is a secret: the answer to its form does not carry it."""
    token = "secret-token-" + "x" * 30
    answer = Client().post(f"/accounts/password/reset/1/{token}/", {"new_password1": "x"})
    assert token not in language_next(answer) and language_next(answer) == "/"
