"""The waiting-list page (/book/wait/) as it opens: a slot free right now says so at once, with
a link to book it, and a day that cannot be booked is refused with a word; both were said only
once the form was sent."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import time_machine

from tests.booking_support import NOW, SHANGHAI, claim, request


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def day_list(page: str) -> str:
    """The form's day list (the page has the language list too)."""
    found = re.search(r'<select id="wait-date".*?</select>', page)
    assert found, page
    return found.group(0)


def wait_page(client: Any, query: str) -> str:
    response = client.get("/book/wait/" + query)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_a_slot_free_right_now_says_so_with_a_link_to_book_it(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    page = wait_page(client_for(buyer), "?cls=A&room=200&date=2026-12-10")
    assert "Good news: it is free right now" in page
    assert 'href="/book/?cls=A&amp;room=200&amp;date=2026-12-10"' in page
    assert re.search(r'<button type="submit"[^>]*>Join the waiting list', page)


def test_a_sold_slot_has_no_word_of_being_free(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    claim(
        r, request("B", room=12, dates=(10,), hour_start=8, hour_end=12), owner=str(second_buyer.id)
    )
    page = wait_page(client_for(buyer), "?cls=B&room=12&date=2026-12-10&start=9&end=11")
    assert "free right now" not in page
    partly = wait_page(client_for(buyer), "?cls=B&room=12&date=2026-12-10&start=11&end=14")
    assert "free right now" not in partly  # one hour of it is sold: worth waiting for


def test_a_day_that_cannot_be_booked_is_refused_at_once(client_for: Any, buyer: Any) -> None:
    with time_machine.travel(dt.datetime(2026, 12, 5, 10, 0, tzinfo=SHANGHAI), tick=False):
        page = wait_page(client_for(buyer), "?cls=A&room=200&date=2026-12-05")
    assert 'role="alert"' in page
    assert "free right now" not in page


def test_the_pickers_link_names_no_day_and_the_form_offers_the_sold_out_one(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    """ "A day sold out? Join its waiting list." carries the choice but no day: the day list
    opened on the first bookable day (free: joining it only said so), not the sold-out one."""
    claim(
        r, request("B", room=12, dates=(10,), hour_start=8, hour_end=12), owner=str(second_buyer.id)
    )
    page = wait_page(client_for(buyer), "?cls=B&room=12&start=8&end=12&month=2026-12")
    chosen = re.findall(r'<option value="([^"]*)" selected>([^<]*)</option>', day_list(page))
    assert chosen == [("2026-12-10", "Dec. 10, 2026 · sold out")]
    # Nothing sold out in the month shown: no day is picked for the buyer.
    free = wait_page(client_for(buyer), "?cls=B&room=13&start=8&end=12&month=2026-12")
    assert re.findall(r'<option value="([^"]*)" selected>', day_list(free)) == [""]
    sent = client_for(buyer).post("/book/wait/", {"cls": "B", "room": "13", "start": "8",
                                                  "end": "12", "date": ""})  # fmt: skip
    assert sent.status_code == 400 and "Choose at least one date." in sent.content.decode()


def test_a_chosen_day_keeps_the_sold_out_days_marked(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    """The link carries the day pressed on the booking page: that day is selected, and the
    days sold out are still marked (they were not, once a day was chosen)."""
    claim(r, request("A", room=14, dates=(10,)), owner=str(second_buyer.id))
    page = wait_page(client_for(buyer), "?cls=A&room=14&date=2026-12-16&month=2026-12")
    days = day_list(page)
    assert re.findall(r'<option value="([^"]*)" selected>', days) == ["2026-12-16"]
    assert '<option value="2026-12-10">Dec. 10, 2026 · sold out</option>' in days


def test_the_pickers_offer_the_waiting_list_once_the_choice_can_be_waited_for(
    client_for: Any, buyer: Any
) -> None:
    """Class B without hours, or C without a box, led to a waiting-list page with no way on:
    its form has no place for them, and sending it said the hours were missing."""
    shop = client_for(buyer)
    link = "A day sold out? Join its waiting list."
    for query, offered in (
        ("?cls=A&room=7", True),
        ("?cls=B&room=7", False),
        ("?cls=B&room=7&start=8&end=10", True),
        ("?cls=C&room=7&start=8&end=10", False),
        ("?cls=C&room=7&start=8&end=10&box=5", True),
    ):
        page = shop.get("/book/" + query + "&month=2026-12").content.decode()
        assert (link in page) is offered, query


def test_the_link_follows_the_month_shown_and_closed_days_are_marked(
    r: redis.Redis, client_for: Any, buyer: Any, staff: Any
) -> None:
    """After "Next month" the link still named no month, so the page read the first month and
    marked nothing; and a day staff closed was offered like any other (refused only once sent)."""
    from booking.domain.closures import Closure
    from booking.engine.closures import closure_add

    closure_add(client=r, actor_id=str(staff.id), closure=Closure(
        "closure-wait-1", (15,), dt.date(2026, 12, 9), dt.date(2026, 12, 9), None, "pipes",
    ))  # fmt: skip
    shop = client_for(buyer)
    calendar = shop.get("/book/parts/calendar/", {"cls": "A", "room": "15", "month": "2026-12"})
    link = re.search(r'href="(/book/wait/\?[^"]+)">A day sold out\?', calendar.content.decode())
    assert link is not None and "month=2026-12" in link.group(1)
    days = day_list(
        wait_page(shop, link.group(1).removeprefix("/book/wait/").replace("&amp;", "&"))
    )
    assert '<option value="2026-12-09">Dec. 9, 2026 · closed: nothing to wait for</option>' in days
    assert re.findall(r'<option value="([^"]*)" selected>', days) == [""]  # not a closed day


def test_empty_days_sent_are_no_days_not_too_many(client_for: Any, buyer: Any) -> None:
    """Eleven empty days were refused as "At most 10 waiting lists at once"."""
    form = {"cls": "A", "room": "16", "date": [""] * 11}
    sent = client_for(buyer).post("/book/wait/", form)
    page = sent.content.decode()
    assert sent.status_code == 400 and "Choose at least one date." in page
    assert "At most 10" not in page


def test_a_bad_day_sent_three_times_is_said_once(client_for: Any, buyer: Any) -> None:
    page = client_for(buyer).get("/book/?cls=A&room=16&date=&date=&date=").content.decode()
    assert page.count("is not a date") == 1
