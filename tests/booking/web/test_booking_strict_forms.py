"""A form that takes slots (hold, book, wait) is read strictly: what the pickers' reading would
drop quietly (hours for class A, a box for class B, a second class, the 32nd date, the 101st
box) refuses the whole form with a message naming it, and nothing is written."""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.rules import booking_new_id
from tests.booking_support import NOW, snapshot

A_DAY = {"cls": "A", "room": "6", "date": "2026-12-11"}
C_HOUR = {"cls": "C", "room": "9", "start": "8", "end": "9", "box": "1", "date": "2026-12-12"}
DECEMBER = [f"2026-12-{d:02d}" for d in range(1, 32)]

# (what the form adds or changes, a phrase of the message that must name the problem)
BAD_FORMS: list[tuple[dict[str, Any], str]] = [
    ({**A_DAY, "start": "8", "end": "12"}, "Class A is booked by the day"),
    ({**A_DAY, "cls": "B", "start": "8", "end": "12", "box": "3"}, "boxes are for class C only"),
    ({**A_DAY, "date": [*DECEMBER, "2027-01-01"]}, "At most 31"),
    ({**C_HOUR, "box": [*(str(b) for b in range(1, 101)), "abc"]}, "At most 100"),
    ({**C_HOUR, "box": ["1", "abc"]}, "abc"),
    ({**A_DAY, "cls": ["A", "B"]}, "twice"),
    ({**A_DAY, "room": ["6", "7"]}, "twice"),
    ({**C_HOUR, "start": "7:30"}, "on the hour"),
    ({**A_DAY, "date": ["2026-12-11", "9" * 100]}, "far too long"),
]


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def signed_in(client_for: Any, buyer: Any) -> Client:
    client: Client = client_for(buyer)
    client.get("/book/")  # the session exists before the snapshot
    return client


def _with_ids(form: dict[str, Any]) -> dict[str, Any]:
    room = int(form["room"][0] if isinstance(form["room"], list) else form["room"])
    return {**form, "booking_id": booking_new_id(room=room)}


@pytest.mark.parametrize("path", ["/book/claim/", "/book/hold/", "/book/wait/"])
@pytest.mark.parametrize(("form", "phrase"), BAD_FORMS, ids=[p for _, p in BAD_FORMS])
def test_a_form_with_what_its_class_has_not_is_refused_and_writes_nothing(
    r: redis.Redis, signed_in: Client, path: str, form: dict[str, Any], phrase: str
) -> None:
    if path == "/book/wait/" and phrase == "At most 31":  # the waiting list's own limit
        phrase = "At most 10 waiting lists at once"
    before = snapshot(r)
    response = signed_in.post(path, _with_ids(form))
    assert response.status_code == 400, (path, form)
    assert phrase in html.unescape(response.content.decode())
    assert snapshot(r) == before


def test_the_same_forms_made_right_are_taken(r: redis.Redis, signed_in: Client) -> None:
    assert signed_in.post("/book/claim/", _with_ids(A_DAY)).status_code == 302
    assert signed_in.post("/book/hold/", _with_ids(C_HOUR)).status_code == 302
    assert signed_in.post("/book/claim/", _with_ids(A_DAY | {"room": "8"})).status_code == 302


@pytest.mark.parametrize("path", ["/book/claim/", "/book/hold/"])
def test_a_good_form_is_read_once_strictly_and_checked_last_by_the_function(
    signed_in: Client, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """No lenient reading beside the strict one, no second check of the dates in Python: the
    function checks the day-ahead rule itself (tests/booking/engine/test_booking_functions.py)."""
    from booking.domain import parser
    from booking.engine import requests
    from booking.web import forms

    reads: list[str] = []

    def counted(name: str, function: Any) -> Any:
        def count(*args: Any, **kwargs: Any) -> Any:
            reads.append(name)
            return function(*args, **kwargs)

        return count

    monkeypatch.setattr(forms, "slot_choice_parse", counted("lenient", forms.slot_choice_parse))
    monkeypatch.setattr(forms, "slot_request_parse", counted("strict", forms.slot_request_parse))
    monkeypatch.setattr(parser, "check_dates", counted("dates", parser.check_dates))
    monkeypatch.setattr(requests, "check_dates", counted("dates", requests.check_dates))
    assert signed_in.post(path, _with_ids(A_DAY)).status_code == 302
    assert reads == ["strict", "dates"]


def test_more_waits_at_once_than_allowed_are_refused_for_that_reason(
    r: redis.Redis, signed_in: Client
) -> None:
    before = snapshot(r)
    days = [f"2026-12-{d:02d}" for d in range(1, 12)]  # 11 days: one over the 10
    for form in (
        {"cls": "A", "room": "158", "date": days},
        {"cls": "C", "room": "9", "start": "8", "end": "9", "date": ["2026-12-05"],
         "box": [str(b) for b in range(1, 12)]},
        # More than a booking takes: the waiting list's limit is named, not the booking's.
        {"cls": "A", "room": "158", "date": [*DECEMBER, "2027-01-01"]},
    ):  # fmt: skip
        response = signed_in.post("/book/wait/", form)
        assert response.status_code == 400
        page = html.unescape(response.content.decode())
        assert "At most 10 waiting lists at once" in page
        assert "dates per booking" not in page
    # Said on the page that offers the list already, not once it is sent.
    asked = signed_in.get("/book/wait/", {"cls": "A", "room": "158", "date": days})
    assert "At most 10 waiting lists at once" in html.unescape(asked.content.decode())
    fine = signed_in.get("/book/wait/", {"cls": "A", "room": "158", "date": days[:10]})
    assert "waiting lists at once" not in html.unescape(fine.content.decode())
    assert snapshot(r) == before


def test_a_blank_form_is_asked_for_its_choices_and_odd_characters_are_named(
    r: redis.Redis, signed_in: Client
) -> None:
    blank = html.unescape(signed_in.post("/book/hold/", {}).content.decode())
    assert "Choose a class: A, B or C." in blank and "(not “”)" not in blank
    assert "Choose a room: 001 to 300." in blank
    for typed, named in (("5\x00", "5\\u0000"), ("\u202eA", "\\u202eA"), ("A\u2066", "A\\u2066")):
        page = signed_in.post("/book/hold/", {"cls": typed, "room": "5", "date": "2026-12-10"})
        text = html.unescape(page.content.decode())
        assert f"(not “{named}”)" in text, typed
        assert typed not in text
