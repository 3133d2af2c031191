"""The booking page tells what stands in the way and what is near instead, marks held days
apart from sold ones, and says "Someone was faster" only when it showed the slots free."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.rules import hold_new_id
from booking.engine.holds import booking_hold
from tests.booking_support import NOW, claim, request
from tests.conftest import Someone

ISSUE_EXAMPLE = "/book/?cls=B&room=158&start=6&end=10&date=2026-12-02"


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


# A calendar cell's times leave the zone out; the calendar names it once, under its cells.
ZONE_ONCE = "Times in the calendar are Shanghai time."


def html(response: Any) -> str:
    assert response.status_code in (200, 409), response.status_code
    return str(response.content.decode())


def day_cell(page: str, date: str) -> str:
    match = re.search(rf'value="{date}" id="day-{date}".*?</button>', page, re.S)
    assert match is not None
    return match.group(0)


def test_the_issues_example_names_the_taken_hours_and_offers_no_hold(
    r: redis.Redis, buyer: Someone, client_for: Any
) -> None:
    assert claim(r, request("B", room=158, dates=(2,), hour_start=8, hour_end=10)).ok
    page = html(client_for(buyer).get(ISSUE_EXAMPLE))
    summary = page[page.index('id="summary"') :]
    assert "Hold and review" not in summary
    assert "2 December 2026 · 08:00–10:00 Shanghai time: sold out" in summary.replace(
        "Dec. 2, 2026", "2 December 2026"
    )
    alternatives = re.findall(r'<li><a href="([^"]+)">([^<]+)</a></li>', summary)
    assert alternatives[0][1].startswith("Room 157 · 06:00–10:00")
    assert "room=157" in alternatives[0][0] and "start=6" in alternatives[0][0]
    assert any(text.startswith("Room 158 · 04:00–08:00") for _, text in alternatives)
    # Dec 2: 08:00-10:00 of the chosen hours are taken, the calendar says which
    assert "06:00–08:00 free, 08:00–10:00 taken" in day_cell(page, "2026-12-02")


def test_a_partly_taken_range_says_which_hours_are_taken_and_which_free(
    r: redis.Redis, client: Client
) -> None:
    assert claim(r, request("B", room=158, dates=(2,), hour_start=10, hour_end=12)).ok
    assert claim(r, request("B", room=158, dates=(3,), hour_start=10, hour_end=14)).ok
    page = html(client.get("/book/?cls=B&room=158&start=10&end=14&date=2026-12-02"))
    cell = day_cell(page, "2026-12-02")
    assert "<small>10:00–12:00 taken, 12:00–14:00 free</small>" in cell, cell
    assert page.count(ZONE_ONCE) == 1  # the zone: once, under the calendar's cells
    assert "Sold out" not in cell
    whole = day_cell(page, "2026-12-03")
    assert "Sold out for 10:00–14:00" in whole, "every chosen hour taken: sold out for them"


def test_held_until_is_said_of_the_held_hours_only(r: redis.Redis, client: Client) -> None:
    req = request("B", room=158, dates=(5,), hour_start=11, hour_end=12)
    assert booking_hold(
        client=r, owner_id="202", request=req, hold_id=hold_new_id(room=158), now=NOW
    ).ok
    page = html(client.get("/book/?cls=B&room=158&start=10&end=14&date=2026-12-06"))
    cell = day_cell(page, "2026-12-05")
    assert "<small>10:00–11:00 free, 11:00–12:00 held until 10:10, 12:00–14:00 free</small>" in cell
    assert page.count(ZONE_ONCE) == 1


def test_a_partly_taken_range_of_chosen_boxes_says_what_is_taken_in_chinese(
    r: redis.Redis, client: Client
) -> None:
    assert claim(r, request("C", room=42, dates=(2,), hour_start=12, hour_end=13, boxes=[7])).ok
    page = html(
        client.get(
            "/book/?cls=C&room=42&box=7&box=8&start=10&end=14&date=2026-12-03",
            headers={"Accept-Language": "zh-hans"},
        )
    )
    cell = day_cell(page, "2026-12-02")
    assert "10:00–12:00 空闲，12:00–13:00 已订，13:00–14:00 空闲" in cell, cell


def test_calendar_days_say_partly_booked_and_sold_out(r: redis.Redis, client: Client) -> None:
    assert claim(r, request("B", room=158, dates=(2,), hour_start=8, hour_end=10)).ok
    assert claim(r, request("B", room=158, dates=(3,), hour_start=0, hour_end=24)).ok
    page = html(client.get("/book/?cls=B&room=158&month=2026-12"))
    assert "Partly booked" in day_cell(page, "2026-12-02")
    assert "Sold out" in day_cell(page, "2026-12-03")
    assert "disabled" in day_cell(page, "2026-12-03")
    assert "Partly booked" not in day_cell(page, "2026-12-04")


def test_a_held_day_says_until_when_not_sold_out(r: redis.Redis, client: Client) -> None:
    req = request("A", room=9, dates=(5,))
    assert booking_hold(
        client=r, owner_id="202", request=req, hold_id=hold_new_id(room=9), now=NOW
    ).ok
    page = html(client.get("/book/?cls=A&room=9&month=2026-12"))
    cell = day_cell(page, "2026-12-05")
    assert "<small>Held until 10:10</small>" in cell, cell
    assert page.count(ZONE_ONCE) == 1
    assert "Sold out" not in cell


def test_someone_was_faster_only_when_the_page_showed_the_slots_free(
    r: redis.Redis, buyer: Someone, client_for: Any
) -> None:
    shopper = client_for(buyer)
    form = {"cls": "B", "room": "158", "start": "6", "end": "10", "date": "2026-12-02"}
    assert claim(r, request("B", room=158, dates=(2,), hour_start=8, hour_end=10)).ok
    seen_free = html(shopper.post("/book/hold/", {**form, "seen": "free"}))
    assert "Someone was faster" in seen_free
    not_seen = html(shopper.post("/book/hold/", form))
    assert "Someone was faster" not in not_seen
    assert "These slots are not free" in not_seen


def test_a_refresh_tells_the_buyer_a_chosen_slot_was_taken_meanwhile(
    r: redis.Redis, buyer: Someone, client_for: Any
) -> None:
    shopper = client_for(buyer)
    picked = "?cls=C&room=42&box=7&start=10&end=12&date=2026-12-16"
    page = html(shopper.get("/book/" + picked))
    assert "Hold and review" in page
    poll = re.search(r'id="panel-refresh" hidden data-hx-get="([^"]+)"', page)
    assert poll is not None and "was=free" in poll.group(1)
    url = poll.group(1).replace("&amp;", "&")
    refresh = {"HX-Request": "true", "X-Strongroom-Refresh": "1"}
    assert shopper.get(url, headers=refresh).status_code == 204  # nothing new
    req = request("C", room=42, dates=(16,), hour_start=11, hour_end=12, boxes=[7])
    assert claim(r, req, owner="303").ok
    changed = shopper.get(url, headers=refresh)
    assert changed.status_code == 200 and "HX-Push-Url" not in changed
    text = changed.content.decode()
    assert "Taken while you were choosing" in text and "Hold and review" not in text
    assert "16 December 2026 · 11:00–12:00 Shanghai time · box 7: sold out" in text.replace(
        "Dec. 16, 2026", "16 December 2026"
    )


def test_the_room_picker_no_longer_ships_every_room_number(client: Client) -> None:
    page = html(client.get("/book/?cls=C&room=42"))
    assert "<datalist" not in page and page.count("<option") < 60
