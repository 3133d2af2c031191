"""The sales window: rolling from tomorrow (STRONGROOM_SELL_DAYS ahead) by default, so a site
running across a month's end keeps selling without a restart; stored in the store, changed by
staff on the dashboard (audited); the environment gives only its first value."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client, override_settings
from hypothesis import given
from hypothesis import strategies as st

from booking.domain.parser import slot_request_parse
from booking.domain.rules import (
    bookable_days,
    booking_new_id,
    day_refusal,
    day_refusals,
    season_bounds,
)
from booking.domain.window import (
    SalesWindow,
    window_current,
    window_forget,
    window_from_settings,
    window_remember,
)
from booking.engine.claims import booking_claim
from booking.engine.window import window_read, window_set
from strongroom.audit import staff_audit_entries
from tests.booking.web.test_booking_pages import day_button, html
from tests.booking_support import BUYER, SHANGHAI

D = dt.date
EVENING = dt.datetime(2027, 1, 31, 22, 0, tzinfo=SHANGHAI)  # the last evening of January
MORNING = dt.datetime(2027, 2, 1, 9, 0, tzinfo=SHANGHAI)  # the next morning


@pytest.fixture
def rolling() -> Iterator[None]:
    """The environment's first value: no fixed days, 31 days ahead."""
    with override_settings(
        STRONGROOM_SEASON_START=None, STRONGROOM_SEASON_END=None, STRONGROOM_SELL_DAYS=31
    ):
        yield


def book(client: redis.Redis, date: dt.date, now: dt.datetime) -> Any:
    req = slot_request_parse(cls="A", room=7, dates=[date], now=now)
    return booking_claim(
        client=client, owner_id=BUYER, request=req, booking_id=booking_new_id(room=7), now=now
    )


def calendar(client: Client, month: str, room: int = 7) -> str:
    return html(
        client.get("/book/parts/calendar/", {"cls": "A", "room": str(room), "month": month})
    )


def test_a_rolling_window_moves_forward_over_a_month_s_end_without_a_restart(
    r: redis.Redis, client: Client, rolling: None
) -> None:
    with time_machine.travel(EVENING, tick=False):
        assert season_bounds() == (D(2027, 2, 1), D(2027, 3, 3))
        assert book(r, D(2027, 2, 1), EVENING).ok
        march = calendar(client, "2027-03")
        assert "disabled" not in day_button(march, "2027-03-03")
        assert "disabled" in day_button(march, "2027-03-04")  # not on sale yet, and says so
        assert "Not on sale" in day_button(march, "2027-03-04")
        assert "Closed" not in day_button(march, "2027-03-04")  # the staff's word for a closure
    with time_machine.travel(MORNING, tick=False):
        # The same process, a day later: the window has moved on by itself.
        assert season_bounds() == (D(2027, 2, 2), D(2027, 3, 4))
        assert "disabled" not in day_button(calendar(client, "2027-03"), "2027-03-04")
        assert book(r, D(2027, 3, 4), MORNING).ok
        assert "Sold out" in day_button(calendar(client, "2027-03"), "2027-03-04")
        february = calendar(client, "2027-02")
        assert "Today" in day_button(february, "2027-02-01")
        assert "disabled" not in day_button(february, "2027-02-02")


def test_the_stored_window_wins_over_the_environment_and_other_processes_read_it(
    r: redis.Redis, rolling: None
) -> None:
    with time_machine.travel(EVENING, tick=False):
        fixed = SalesWindow(first=D(2027, 6, 1), last=D(2027, 6, 30))
        window_set(client=r, actor_id="900", window=fixed, reason="summer")
        assert season_bounds() == (D(2027, 6, 1), D(2027, 6, 30))
        # Another process: it has not read the store yet, then reads it.
        window_forget()
        assert window_current().rolling  # the environment's first value, until it reads
        assert window_read(client=r) == fixed
        assert season_bounds() == (D(2027, 6, 1), D(2027, 6, 30))
        (entry,) = staff_audit_entries(client=r, kind="sales_window")
        assert entry.actor == "900"
        assert entry.detail == "rolling 31 days -> fixed 2027-06-01..2027-06-30: summer"


def test_staff_change_the_window_on_the_dashboard(
    r: redis.Redis, client_for: Any, staff: Any, buyer: Any
) -> None:
    buyer_client, staff_client = client_for(buyer), client_for(staff)
    assert buyer_client.get("/staff/window/").status_code in (302, 403, 404)
    page = html(staff_client.get("/staff/window/"))
    assert 'id="window-form"' in page
    refused = staff_client.post(
        "/staff/window/set/", {"mode": "fixed", "first": "2027-01-10", "last": "2027-01-01"}
    )
    assert refused.status_code == 400 and "The window was not changed." in html(refused)
    assert window_read(client=r) is None, "nothing stored"
    done = staff_client.post(
        "/staff/window/set/",
        {"mode": "rolling", "days": "60", "reason": "longer"},
    )
    assert done.status_code == 302
    assert window_read(client=r) == SalesWindow(days=60)
    (entry,) = staff_audit_entries(client=r, kind="sales_window")
    assert entry.actor == str(staff.id) and entry.detail.endswith("rolling 60 days: longer")
    chinese = html(staff_client.get("/staff/window/", HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert "销售窗口" in chinese


def test_a_hold_placed_before_staff_narrowed_the_window_is_booked_from_its_confirm_page(
    r: redis.Redis, client_for: Any, buyer: Any, rolling: None
) -> None:
    """Holds keep their dates whatever the window (the staff page says so): the Book button of
    a hold's confirm page still books it after staff cut the window short of its day, where a
    new choice of that day is refused."""
    browser = client_for(buyer)
    with time_machine.travel(EVENING, tick=False):
        held = browser.post("/book/hold/", {"cls": "A", "room": "40", "date": "2027-02-25"})
        assert held.status_code == 302 and "/book/confirm/" in held["Location"]
        page = html(browser.get(held["Location"]))
        form = {name: value for name, value in re.findall(r'name="(\w+)" value="([^"]*)"', page)}
        window_set(client=r, actor_id="900", window=SalesWindow(days=20), reason="short")
        # The hold keeps what it keeps: a form that names it with another choice is read as
        # any form is (refused, nothing booked).
        other = browser.post("/book/claim/", dict(form, room="41"))
        assert other.status_code == 400 and "outside the season" in html(other)
        booked = browser.post("/book/claim/", form)
        assert booked.status_code == 302 and "/book/done/" in booked["Location"], html(booked)
        assert f"/book/done/{form['booking_id']}/" == booked["Location"]
        again = dict(form, booking_id=booking_new_id(room=40), hold_id="", room="41")
        refused = browser.post("/book/claim/", again)
        assert refused.status_code == 400 and "outside the season" in html(refused)


def test_a_fixed_window_that_began_in_the_past_is_said_from_tomorrow(
    r: redis.Redis, client: Client, rolling: None
) -> None:
    """Staff set a window whose first days have passed: the pages say what can be booked,
    from tomorrow, not days nobody can book any more."""
    with time_machine.travel(EVENING, tick=False):
        window_set(client=r, actor_id="900", window=SalesWindow(first=D(2027, 1, 20),
                   last=D(2027, 2, 28)), reason="late")  # fmt: skip
        page = html(client.get("/book/"))
        assert "from Feb. 1, 2027 to Feb. 28, 2027" in page
        assert "Season Feb. 1, 2027 to Feb. 28, 2027" in page
        assert "Jan. 20, 2027" not in page


def test_the_environments_window_is_built_once_and_again_after_a_change_of_its_settings(
    settings: Any,
) -> None:
    settings.STRONGROOM_SEASON_START = settings.STRONGROOM_SEASON_END = None
    settings.STRONGROOM_SELL_DAYS = 31
    kept = window_from_settings()
    assert window_from_settings() is kept and kept == SalesWindow(days=31)
    settings.STRONGROOM_SELL_DAYS = 45
    assert window_from_settings() == SalesWindow(days=45)
    settings.STRONGROOM_SEASON_START, settings.STRONGROOM_SEASON_END = D(2027, 3, 1), D(2027, 3, 9)
    assert window_from_settings() == SalesWindow(days=45, first=D(2027, 3, 1), last=D(2027, 3, 9))


@given(
    first=st.dates(D(2026, 1, 1), D(2028, 12, 31)),
    length=st.integers(0, 400),
    rolling=st.booleans(),
    today=st.dates(D(2026, 1, 1), D(2028, 12, 31)),
    start=st.dates(D(2025, 12, 1), D(2029, 1, 31)),
    span=st.integers(0, 45),
)
def test_each_days_refusal_follows_the_window_and_the_one_day_ahead_rule(
    first: dt.date, length: int, rolling: bool, today: dt.date, start: dt.date, span: int
) -> None:
    """A month's days are judged together (`day_refusals`, the window worked out once): each
    reads as the rule says, for fixed and rolling windows, past, today and beyond, and the
    bookable days are those with no refusal."""
    window = (
        SalesWindow(days=1 + length % 365)
        if rolling
        else SalesWindow(first=first, last=first + dt.timedelta(days=length % 365))
    )
    days = [start + dt.timedelta(days=i) for i in range(span)]
    low, high = window.bounds(today)

    def rule(date: dt.date) -> str:
        if rolling and date <= today:  # a rolling window starts tomorrow
            return "past" if date < today else "today"
        if not low <= date <= high:
            return "outside_season"
        return "past" if date < today else "today" if date == today else ""

    window_remember(window)
    try:
        assert day_refusals(days, today) == {date: rule(date) for date in days}
        assert [day_refusal(date, today) for date in days] == [rule(date) for date in days]
        assert bookable_days(days, today) == [date for date in days if not rule(date)]
    finally:
        window_remember(None)
