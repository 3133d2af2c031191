"""The page of a form the store did not answer in time (templates/not_confirmed.html) says what
was pressed: a booking, a cancellation, a pickup at the safe, or, for any other form, neither.
Here the single test server plays a primary without its replica ("aof+replica" asks it for one
it does not have): every durable write ran but is not confirmed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.records import Booking
from booking.domain.rules import booking_new_id
from tests.booking_support import NOW, SHANGHAI, claim, day, request
from tests.conftest import Someone

pytestmark = pytest.mark.single_node  # one server without a replica: never confirmed

BOOKING = "the same form never makes a second booking"
CANCEL = "the same form never cancels twice"
PICKUP = "we could not tell whether the safe opened"
OTHER = "Please press the button again: once it is confirmed you will see it."
WORDS = (BOOKING, CANCEL, PICKUP, OTHER)


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def booked(r: redis.Redis, someone: Someone) -> Booking:
    made = claim(r, request("A", dates=(3,)), owner=str(someone.id)).booking
    assert made is not None
    return made


def unconfirmed(
    settings: Any, client: Client, path: str, form: dict[str, str], language: str = "en"
) -> str:
    """The page answering `form`, posted while the store cannot confirm a write."""
    settings.STRONGROOM_DURABILITY = "aof+replica"
    answer = client.post(path, form, HTTP_ACCEPT_LANGUAGE=language)
    assert answer.status_code == 503
    return answer.content.decode()


def only(page: str, words: str) -> bool:
    """`page` says `words`, and none of the other forms' words."""
    return words in page and not any(other in page for other in WORDS if other != words)


def test_a_booking_the_store_did_not_confirm_says_the_form_never_books_twice(
    settings: Any, client_for: Callable[[Someone], Client], buyer: Someone
) -> None:
    form = {"cls": "A", "room": "31", "date": day(5).isoformat()}
    page = unconfirmed(
        settings, client_for(buyer), "/book/claim/", {**form, "booking_id": booking_new_id(room=31)}
    )
    assert only(page, BOOKING)


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", "we could not tell whether the booking was cancelled"),
        ("zh-hans", "我们无法确定预订是否已取消。请再按一次按钮：同一张表单绝不会取消两次"),
    ],
)
def test_a_cancel_the_store_did_not_confirm_speaks_of_the_cancellation(
    r: redis.Redis,
    settings: Any,
    client_for: Callable[[Someone], Client],
    buyer: Someone,
    language: str,
    words: str,
) -> None:
    booking = booked(r, buyer)
    page = unconfirmed(
        settings,
        client_for(buyer),
        f"/book/mine/{booking.id}/cancel/",
        {"request_id": "c" * 32},
        language,
    )
    assert words in page and "第二个预订" not in page
    if language == "en":
        assert only(page, CANCEL)


def test_a_staff_cancel_the_store_did_not_confirm_speaks_of_the_cancellation(
    r: redis.Redis,
    settings: Any,
    client_for: Callable[[Someone], Client],
    buyer: Someone,
    staff: Someone,
) -> None:
    booking = booked(r, buyer)
    path = f"/staff/bookings/{booking.id}/cancel/"
    assert only(unconfirmed(settings, client_for(staff), path, {"reason": "leak"}), CANCEL)


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", PICKUP),
        ("zh-hans", "我们无法确定保险柜是否已打开。请再按一次按钮：用同一张表单再按一次是安全的"),
    ],
)
def test_a_pickup_the_store_did_not_confirm_asks_whether_the_safe_opened(
    r: redis.Redis, settings: Any, buyer: Someone, language: str, words: str
) -> None:
    booking = booked(r, buyer)
    form = {"room": "7", "code": booking.pickup_code(), "attempt": "p" * 32}
    with time_machine.travel(dt.datetime(2026, 12, 3, 9, 0, tzinfo=SHANGHAI), tick=False):
        page = unconfirmed(settings, Client(), "/book/pickup/", form, language)
    assert words in page and "第二个预订" not in page
    if language == "en":
        assert only(page, PICKUP)


@pytest.mark.parametrize(
    ("language", "words"),
    [("en", OTHER), ("zh-hans", "请再按一次按钮：一旦确认您就会看到。")],
)
def test_any_other_form_the_store_did_not_confirm_names_no_booking(
    settings: Any,
    client_for: Callable[[Someone], Client],
    buyer: Someone,
    staff: Someone,
    language: str,
    words: str,
) -> None:
    page = unconfirmed(
        settings, client_for(staff), f"/staff/people/{buyer.id}/staff/", {"is_staff": "1"}, language
    )
    assert words in page
    assert "booking" not in page.split("<main", 1)[1] and "预订" not in page


def test_a_cancel_the_store_stopped_answering_speaks_of_the_cancellation(
    r: redis.Redis,
    monkeypatch: Any,
    client_for: Callable[[Someone], Client],
    buyer: Someone,
) -> None:
    from booking.engine import cancel

    booking = booked(r, buyer)

    def no_answer(*args: Any, **kwargs: Any) -> Any:
        raise redis.TimeoutError("the store stopped answering")

    monkeypatch.setattr(cancel, "durable_fcall", no_answer)
    answer = client_for(buyer).post(f"/book/mine/{booking.id}/cancel/", {"request_id": "d" * 32})
    page = answer.content.decode()
    assert answer.status_code == 503
    assert "stopped answering while it took your cancellation" in page
    assert "we could not tell whether the booking was cancelled" in page
    assert BOOKING not in page and 'name="request_id" value="' + "d" * 32 in page
