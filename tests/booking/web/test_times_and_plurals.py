"""Times said with their zone, ends never rounded down, counts in the singular when there is one
(issue 33, point 16). Frozen clock, real store, Django's test client."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import redis
import time_machine

from booking.domain.rules import booking_new_id
from booking.domain.site_time import clock
from tests.booking_support import NOW, SHANGHAI, claim, request

B_8_12 = {"cls": "B", "room": "7", "start": "8", "end": "12", "date": "2026-12-08"}
# A moment with seconds: a hold taken now ends at 10:18:46, ten minutes later.
ODD_SECOND = NOW + dt.timedelta(minutes=8, seconds=46)


def owner(someone: Any) -> str:
    return str(someone.id)


def test_an_end_with_seconds_is_shown_as_the_next_minute_not_the_last() -> None:
    assert clock(dt.datetime(2026, 12, 1, 1, 8, 46, tzinfo=SHANGHAI)) == "01:09 Shanghai time"
    assert clock(dt.datetime(2026, 12, 1, 1, 8, 0, tzinfo=SHANGHAI)) == "01:08 Shanghai time"


def test_held_until_on_the_refused_page_is_not_rounded_down(
    client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    with time_machine.travel(ODD_SECOND, tick=False):
        assert client_for(buyer).post("/book/hold/", B_8_12).status_code == 302
        refused = client_for(second_buyer).post("/book/hold/", B_8_12)
    assert refused.status_code == 409
    page = refused.content.decode()
    assert "10:19" in page  # the hold ends at 10:18:46
    assert "10:18" not in page


def test_the_account_page_says_whose_clock_the_booked_hours_follow(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    with time_machine.travel(NOW, tick=False):
        assert claim(r, request("B", dates=(2,), hour_start=10, hour_end=13), owner=owner(buyer)).ok
        page = client_for(buyer).get("/accounts/me/").content.decode()
    # The day as every page shows one, then the hours on the site's clock.
    assert re.search(
        r"Dec\. 2, 2026 10:00–13:00 <span class=\"zone\">\(Shanghai time\)</span>", page
    )


def test_a_hold_of_one_minute_is_one_minute_in_english_and_chinese(
    client_for: Any, buyer: Any, settings: Any
) -> None:
    settings.STRONGROOM_HOLD_SECONDS = 60
    with time_machine.travel(NOW, tick=False):
        shopper = client_for(buyer)
        english = shopper.get("/book/", B_8_12).content.decode()
        shopper.defaults["HTTP_ACCEPT_LANGUAGE"] = "zh-hans"
        chinese = shopper.get("/book/", B_8_12).content.decode()
    assert "for at least 1 minute while you confirm" in english
    assert "1 分钟" in chinese


def test_an_allowance_of_one_booking_an_hour_is_said_in_the_singular(
    client_for: Any, buyer: Any, settings: Any
) -> None:
    settings.STRONGROOM_BOOKINGS_PER_HOUR = 1
    shopper = client_for(buyer)
    with time_machine.travel(NOW, tick=False):
        for room in (11, 12):
            form = {"cls": "A", "room": str(room), "date": "2026-12-05",
                    "booking_id": booking_new_id(room=room)}  # fmt: skip
            answer = shopper.post("/book/claim/", form)
    assert answer.status_code == 429
    assert "You have made 1 booking in the last hour" in answer.content.decode()


def test_one_box_is_a_box_in_the_calendar_file(r: redis.Redis, client_for: Any, buyer: Any) -> None:
    with time_machine.travel(NOW, tick=False):
        made = claim(
            r, request("C", dates=(3,), hour_start=9, hour_end=10, boxes=[5]), owner=owner(buyer)
        )
        assert made.ok and made.booking is not None
        ics = client_for(buyer).get(f"/book/mine/{made.booking.id}/calendar.ics").content.decode()
    assert "box 5" in ics.replace("\r\n ", "")
    assert "boxes 5" not in ics.replace("\r\n ", "")


def test_one_box_is_labelled_box_on_the_booking_page(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    with time_machine.travel(NOW, tick=False):
        made = claim(
            r, request("C", dates=(3,), hour_start=9, hour_end=10, boxes=[5]), owner=owner(buyer)
        )
        assert made.ok and made.booking is not None
        page = client_for(buyer).get(f"/book/done/{made.booking.id}/").content.decode()
    assert re.search(r"<dt>Box</dt><dd>5</dd>", page)


def test_a_calendar_whose_only_time_is_hours_sold_out_names_the_zone() -> None:
    """Class C, hours chosen and no box: a day sold out for those hours has no runs, only its
    hours ("Sold out for 10:00-11:00"); the zone under the cells is still said."""
    from booking.web.pick_page import Day, Month

    day = Day(dt.date(2026, 12, 2), "sold_for", hours=(10, 11))
    month = Month(dt.date(2026, 12, 1), [], [[day]], None, None, checked=True)
    assert day.note == "Sold out for 10:00–11:00" and month.timed
    assert not Month(dt.date(2026, 12, 1), [], [[Day(day.date, "partly")]], None, None, True).timed
