"""A buyer never waits for a slot they booked themselves: the waiting list says so and writes
nothing, and the booking page does not offer it when all that stands in the way of a choice is
their own booking; the parts of a room the buyer did not book can still be waited for."""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.engine.bookings import booking_get
from booking.engine.cancel import booking_cancel
from booking.engine.waits import Wait, wait_join, waits_of
from tests.booking_support import NOW, booked_id, day, snapshot
from tests.conftest import Someone, person_make


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def test_own_slots_are_refused_and_nothing_is_written(r: redis.Redis, buyer: Someone) -> None:
    booked_id(r, buyer, cls="A", room=7, dates=[day(5)])
    booked_id(r, buyer, cls="B", room=8, dates=[day(5)], hour_start=10, hour_end=12)
    booked_id(r, buyer, cls="C", room=9, dates=[day(5)], hour_start=10, hour_end=12, boxes=[7, 8])
    owner = str(buyer.id)
    before = snapshot(r)
    for wait in (
        Wait(7, "A", day(5)),
        Wait(8, "B", day(5), (11, 13)),  # overlaps 10-12 by one hour
        Wait(8, "B", day(5), (9, 11)),
        Wait(9, "C", day(5), (10, 11), 8),
    ):
        assert wait_join(client=r, owner_id=owner, wait=wait) == "own", wait
    assert snapshot(r) == before
    assert waits_of(client=r, owner_id=owner) == []


def test_what_the_buyer_did_not_book_can_still_be_waited_for(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    booked_id(r, buyer, cls="B", room=8, dates=[day(5)], hour_start=10, hour_end=12)
    booked_id(r, buyer, cls="C", room=9, dates=[day(5)], hour_start=10, hour_end=12, boxes=[7])
    # Someone else's slots beside the buyer's own: these the buyer may wait for.
    booked_id(r, second_buyer, cls="B", room=8, dates=[day(5)], hour_start=12, hour_end=14)
    booked_id(
        r, second_buyer, cls="C", room=9, dates=[day(5)], hour_start=10, hour_end=12, boxes=[8]
    )
    booked_id(r, second_buyer, cls="A", room=7, dates=[day(6)])
    owner = str(buyer.id)
    assert wait_join(client=r, owner_id=owner, wait=Wait(8, "B", day(5), (12, 14))) == "ok"
    assert wait_join(client=r, owner_id=owner, wait=Wait(9, "C", day(5), (10, 12), 8)) == "ok"
    assert wait_join(client=r, owner_id=owner, wait=Wait(7, "A", day(6))) == "ok"
    assert len(waits_of(client=r, owner_id=owner)) == 3


def test_a_cancelled_booking_no_longer_counts_as_the_buyers(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    mine = booked_id(r, buyer, cls="A", room=7, dates=[day(5)])
    cancelled = booking_cancel(
        client=r, booking_id=mine, actor_id=str(buyer.id), actor_is_staff=False
    )
    assert cancelled.ok
    booked_id(r, second_buyer, cls="A", room=7, dates=[day(5)])
    assert wait_join(client=r, owner_id=str(buyer.id), wait=Wait(7, "A", day(5))) == "ok"


def test_the_page_says_the_slot_is_the_buyers_own(
    r: redis.Redis, client_for: Any, buyer: Someone
) -> None:
    booked_id(r, buyer, cls="A", room=7, dates=[day(5)])
    web: Client = client_for(buyer)
    web.get("/book/")
    before = snapshot(r)
    answer = web.post("/book/wait/", {"cls": "A", "room": "7", "date": day(5).isoformat()})
    assert answer.status_code == 302 and answer["Location"] == "/book/mine/"
    page = html.unescape(web.get(answer["Location"]).content.decode())
    assert "You have booked that slot yourself: there is nothing to wait for." in page
    assert snapshot(r) == before


def test_the_booking_page_names_the_buyers_own_booking(
    r: redis.Redis, client_for: Any, buyer: Someone, second_buyer: Someone
) -> None:
    booking_id = booked_id(r, buyer, cls="C", room=9, dates=[day(5)], hour_start=10, hour_end=12,
                       boxes=[7])  # fmt: skip
    stranger = person_make(r, "a_stranger")
    booked_id(r, stranger, cls="C", room=9, dates=[day(5)], hour_start=12, hour_end=13, boxes=[8])
    query = f"cls=C&room=9&date={day(5).isoformat()}&start=11&end=13&box=7&box=8"
    mine = html.unescape(client_for(buyer).get(f"/book/?{query}").content.decode())
    assert 'id="choice-blocked"' in mine and 'id="own-booking"' in mine
    # The waiting list stays offered: another part of the choice is someone else's, and the
    # wait page refuses only the buyer's own slots.
    assert f"/book/done/{booking_id}/" in mine and 'id="blocked-wait"' in mine
    # Another buyer sees the same slots as taken, with the waiting list.
    theirs = client_for(second_buyer).get(f"/book/?{query}").content.decode()
    assert 'id="own-booking"' not in theirs and 'id="blocked-wait"' in theirs


def test_the_own_booking_line_is_in_chinese_too(
    r: redis.Redis, client_for: Any, buyer: Someone, second_buyer: Someone
) -> None:
    booked_id(r, buyer, cls="A", room=7, dates=[day(5)])
    booked_id(r, second_buyer, cls="A", room=7, dates=[day(6)])
    web = client_for(buyer)
    days = f"date={day(5).isoformat()}&date={day(6).isoformat()}"
    some = web.get(f"/book/?cls=A&room=7&{days}", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "其中有您自己已订下的时段" in html.unescape(some.content.decode())
    page = web.get(f"/book/?cls=A&room=7&date={day(5).isoformat()}", HTTP_ACCEPT_LANGUAGE="zh-hans")
    text = html.unescape(page.content.decode())
    assert "这是您自己订下的" in text and "查看您的订单" in text


def test_the_wait_page_for_several_days_keeps_them_all_and_joins_the_sold_out_one(
    r: redis.Redis, client_for: Any, buyer: Someone, second_buyer: Someone
) -> None:
    """A choice of two days, one sold out: the form offers both (a single-choice list kept
    only the last, the free one, and the buyer was told it was free and waited for nothing)."""
    booked_id(r, second_buyer, cls="B", room=30, dates=[day(1)], hour_start=18, hour_end=20)
    web: Client = client_for(buyer)
    query = f"cls=B&room=30&start=17&end=20&date={day(1).isoformat()}&date={day(2).isoformat()}"
    form = web.get(f"/book/wait/?{query}").content.decode()
    for d in (day(1), day(2)):
        assert f'type="checkbox" name="date" value="{d.isoformat()}" checked' in form
    posted = {"cls": "B", "room": "30", "start": "17", "end": "20",
              "date": [day(1).isoformat(), day(2).isoformat()]}  # fmt: skip
    answer = web.post("/book/wait/", posted)
    assert answer.status_code == 302
    (waiting,) = waits_of(client=r, owner_id=str(buyer.id))
    assert waiting.wait.date == day(1) and waiting.wait.hours == (17, 20)


def _page_text(answer: Any) -> str:
    return html.unescape(answer.content.decode())


def test_the_page_offers_no_waiting_list_for_a_choice_all_ones_own(
    r: redis.Redis, client_for: Any, buyer: Someone
) -> None:
    booking_id = booked_id(r, buyer, cls="B", room=8, dates=[day(5), day(6)], hour_start=9,
                       hour_end=13)  # fmt: skip
    booking = booking_get(client=r, booking_id=booking_id)
    assert booking is not None
    web = client_for(buyer)
    query = f"cls=B&room=8&start=10&end=12&date={day(5).isoformat()}&date={day(6).isoformat()}"
    page = _page_text(web.get(f"/book/?{query}"))
    assert 'id="choice-blocked"' in page
    assert f"You have booked this yourself: booking {booking.reference}." in page
    assert f'href="/book/done/{booking_id}/"' in page
    assert "Tell me when it frees" not in page and 'id="blocked-wait"' not in page
    chinese = _page_text(web.get(f"/book/?{query}", HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert f"这是您自己订下的：订单 {booking.reference}。" in chinese
    assert "空出时通知我" not in chinese


def test_the_page_still_offers_the_waiting_list_when_a_slot_is_a_strangers(
    r: redis.Redis, client_for: Any, buyer: Someone,
    second_buyer: Someone,
) -> None:  # fmt: skip
    booked_id(r, buyer, cls="A", room=7, dates=[day(5)])
    booked_id(r, second_buyer, cls="A", room=7, dates=[day(6)])
    booked_id(r, buyer, cls="C", room=9, dates=[day(5)], hour_start=10, hour_end=12, boxes=[7])
    booked_id(r, second_buyer, cls="C", room=9, dates=[day(5)], hour_start=10, hour_end=12,
          boxes=[8])  # fmt: skip
    web = client_for(buyer)
    for query in (
        f"cls=A&room=7&date={day(5).isoformat()}&date={day(6).isoformat()}",
        f"cls=C&room=9&start=10&end=12&box=7&box=8&date={day(5).isoformat()}",
    ):
        page = _page_text(web.get(f"/book/?{query}"))
        assert "You have booked some of this yourself" in page, query
        assert 'id="blocked-wait"' in page, query


def test_no_waiting_list_when_the_rest_of_the_choice_is_free(
    r: redis.Redis, client_for: Any, buyer: Someone
) -> None:
    """What stands in the way is his own booking alone (the rest is free): waiting for it would
    be refused (his own) or pointless (free), so it is not offered."""
    booked_id(r, buyer, cls="C", room=9, dates=[day(5)], hour_start=10, hour_end=12, boxes=[7])
    query = f"cls=C&room=9&date={day(5).isoformat()}&start=11&end=13&box=7&box=8"
    page = _page_text(client_for(buyer).get(f"/book/?{query}"))
    assert 'id="choice-blocked"' in page and "You have booked this yourself" in page
    assert 'id="blocked-wait"' not in page
