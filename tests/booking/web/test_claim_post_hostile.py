"""Hostile ids on the booking POST (booking:claim): ids of another room or another buyer,
malformed, empty, oversized or full of key syntax get a clear 400/409, write nothing, never
a 500, for a plain form and for htmx alike."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.rules import hold_new_id
from booking.engine.bookings import hold_get
from booking.engine.holds import booking_hold
from tests.booking.web.test_booking_claim_post import book_form, booked, stored
from tests.booking_support import NOW, request

HTMX = {"HX-Request": "true"}
ODD = [
    "",
    " ",
    "021",
    "021-",
    "021-" + "a" * 25,
    "021-" + "a" * 27,
    "021-" + "A" * 26,
    "021-" + "a" * 25 + "\n",
    "021-" + "a" * 25 + "é",
    "021-{a}" + "a" * 21,
    "021:{x}*" + "a" * 22,
    "{021}-" + "a" * 24,
    " 021-" + "a" * 26,
    "021-" + "a" * 26 + " ",
    "021-" + "a" * 26 + "\n",
    "٠٢١-" + "a" * 26,  # Arabic-Indic digits
    "021-" + "a" * 24 + "🙂",
    "021-" + "a" * 10_000,
    "999-" + "a" * 26,
    "000-" + "a" * 26,
    "020-" + "a" * 26,  # another room
]


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.mark.parametrize("htmx", [False, True], ids=["form", "htmx"])
@pytest.mark.parametrize("field", ["booking_id", "hold_id"])
def test_odd_ids_are_refused_with_a_message_and_write_nothing(
    r: redis.Redis, client_for: Callable[[Any], Client], buyer: Any, field: str, htmx: bool
) -> None:
    client = client_for(buyer)
    keys_before = stored(r)
    for value in ODD:
        if field == "hold_id" and value in ("", " "):
            continue  # no hold: a plain booking
        form = {**book_form(21), field: value}
        answer = client.post("/book/claim/", form, headers=HTMX if htmx else {})
        assert answer.status_code == 400, (value[:40], answer.status_code)
        assert "out of date" in answer.content.decode(), value[:40]
        assert stored(r) == keys_before, value[:40]
    assert booked(r, buyer) == 0


def test_a_blank_hold_id_books_without_a_hold(
    r: redis.Redis, client_for: Callable[[Any], Client], buyer: Any
) -> None:
    """ " " as hold id: not a hold (the form field left blank by hand), so no 500."""
    answer = client_for(buyer).post("/book/claim/", {**book_form(21), "hold_id": " "})
    assert answer.status_code in (302, 400), answer.status_code
    assert answer.status_code == 302 or booked(r, buyer) == 0


@pytest.mark.parametrize("htmx", [False, True], ids=["form", "htmx"])
def test_another_buyers_hold_is_not_converted_and_stays_theirs(
    r: redis.Redis,
    client_for: Callable[[Any], Client],
    buyer: Any,
    second_buyer: Any,
    htmx: bool,
) -> None:
    theirs = hold_new_id(room=21)
    held = booking_hold(
        client=r, owner_id=str(second_buyer.id), request=request("A", room=21, dates=(5,)),
        hold_id=theirs, now=NOW,
    )  # fmt: skip
    assert held.ok
    keys_before = stored(r)
    answer = client_for(buyer).post(
        "/book/claim/", {**book_form(21), "hold_id": theirs}, headers=HTMX if htmx else {}
    )
    assert answer.status_code in (400, 409), answer.status_code
    assert booked(r, buyer) == 0
    assert stored(r) == keys_before


def test_a_booking_id_of_another_buyers_booking_is_not_theirs_to_take(
    r: redis.Redis, client_for: Callable[[Any], Client], buyer: Any, second_buyer: Any
) -> None:
    form = book_form(21)
    assert client_for(second_buyer).post("/book/claim/", form).status_code == 302
    keys_before = stored(r)
    for other in (form, {**form, "cls": "B"}, {**form, "date": form["date"][:-1] + "6"}):
        answer = client_for(buyer).post("/book/claim/", other)
        assert answer.status_code in (400, 409), (other, answer.status_code)
        assert booked(r, buyer) == 0 and booked(r, second_buyer) == 1
        assert stored(r) == keys_before


def test_odd_hold_ids_on_the_confirm_page_and_release_answer_without_a_500(
    r: redis.Redis, client_for: Callable[[Any], Client], buyer: Any, second_buyer: Any
) -> None:
    theirs = hold_new_id(room=21)
    assert booking_hold(
        client=r, owner_id=str(second_buyer.id), request=request("A", room=21, dates=(5,)),
        hold_id=theirs, now=NOW,
    ).ok  # fmt: skip
    client = client_for(buyer)
    keys_before = stored(r)
    for value in [*ODD[2:], theirs]:
        quoted = value.replace("%", "%25").replace("\n", "%0A").replace(" ", "%20")
        page = client.get(f"/book/confirm/{quoted}/", headers={"Sec-Purpose": "prefetch"})
        assert page.status_code in (302, 404), (value[:40], page.status_code)
        page = client.get(f"/book/confirm/{quoted}/")
        assert page.status_code in (302, 404), (value[:40], page.status_code)
        gone = client.post("/book/hold/release/", {"hold_id": value})
        assert gone.status_code == 302, (value[:40], gone.status_code)
    assert stored(r) == keys_before
    held = hold_get(client=r, hold_id=theirs)
    assert held is not None and held.owner_id == str(second_buyer.id)
