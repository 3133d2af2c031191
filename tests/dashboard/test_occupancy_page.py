"""The occupancy map (/staff/occupancy/): slots buyers hold read as held, with until when, as on
the buyers' map; the hour range's words."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.rules import hold_new_id
from booking.domain.site_time import clock
from booking.engine.holds import booking_hold
from booking.slots.building_map import building_map_read
from tests.booking_support import NOW, claim, day, request
from tests.conftest import Someone


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def hold(r: redis.Redis, owner: str, **kwargs: object) -> dt.datetime:
    wanted = request(**kwargs)  # type: ignore[arg-type]
    made = booking_hold(
        client=r, owner_id=owner, request=wanted, hold_id=hold_new_id(room=wanted.room), now=NOW
    )
    assert made.ok and made.hold is not None
    return made.hold.expires_at


def row_of(html: str, label: str) -> str:
    found = re.search(rf'<th scope="row">(?:<a [^>]*>)?{label}(?:</a>)?</th>(.*?)</tr>', html, re.S)
    assert found, label
    return found.group(1)


def test_a_held_class_a_room_reads_held_until_as_on_the_buyers_map(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    until = hold(r, str(buyer.id), cls="A", room=200, dates=(3,))
    claim(r, request("A", 201, (3,)))
    html = client_for(staff).get("/staff/occupancy/?date=2026-12-03&cls=A").content.decode()
    assert "Held for a buyer" in html  # the legend
    cells = re.findall(r'<td class="heat heat-(\d)( heat--held)?">(.*?)</td>', html, re.S)
    held = [body for _level, mark, body in cells if mark]
    assert len(held) == 1 and ">200<" in held[0]
    assert f"held until {clock(until)}" in held[0]
    booked = [body for level, mark, body in cells if level == "4"]
    assert len(booked) == 1 and ">201<" in booked[0] and "held" not in booked[0]
    # The buyers' map says the same of the same rooms: one read of what is free.
    buyers = building_map_read(client=r, cls="A", dates=[day(3)], hours=None, rooms=range(1, 301))
    assert [s.room for s in buyers.rooms if s.state == "held"] == [200]
    assert [s.held_until for s in buyers.rooms if s.state == "held"] == [until]


def test_held_hours_and_boxes_show_on_the_floor_and_its_rooms(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    until = hold(r, str(buyer.id), cls="B", room=7, dates=(3,), hour_start=8, hour_end=10)
    claim(r, request("B", 7, (3,), hour_start=10, hour_end=11))
    client = client_for(staff)
    html = client.get("/staff/occupancy/?date=2026-12-03&cls=B&floor=1").content.decode()
    room7 = row_of(html, "007")
    tds = re.findall(r"<td [^>]*>.*?</td>", room7, re.S)[:24]
    held = [h for h, td in enumerate(tds) if "heat--held" in td]
    assert held == [8, 9]
    assert f"007 08:00: held until {clock(until)}" in tds[8]
    assert "heat-4" in tds[10] and "heat--held" not in tds[10]
    summary = row_of(html, "001–025")
    hours = re.findall(r"<td [^>]*>.*?</td>", summary, re.S)
    assert [h for h, td in enumerate(hours[:24]) if 'title="1 slot held"' in td] == [8, 9]
    assert "(2 held)" in summary and "held" not in row_of(html, "026–050")

    until_c = hold(r, "202", cls="C", room=30, dates=(3,), hour_start=9, hour_end=11, boxes=[7])
    c_html = client.get(
        "/staff/occupancy/?date=2026-12-03&cls=C&floor=2&hour_start=9&hour_end=11"
    ).content.decode()
    boxes = re.findall(r"<td [^>]*>.*?</td>", row_of(c_html, "030"), re.S)[:100]
    assert [b for b, td in enumerate(boxes, 1) if "heat--held" in td] == [7]
    assert f"030 #7: held until {clock(until_c)}" in boxes[6]


def test_an_expired_hold_is_free_again(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    until = hold(r, str(buyer.id), cls="A", room=200, dates=(3,))
    with time_machine.travel(until + dt.timedelta(seconds=1), tick=False):
        html = client_for(staff).get("/staff/occupancy/?date=2026-12-03&cls=A").content.decode()
    assert re.search(r'<td class="[^"]*heat--held', html) is None


def test_an_empty_hour_range_is_called_empty(
    staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    same = client.get("/staff/occupancy/?cls=C&hour_start=5&hour_end=5").content.decode()
    assert "The hour range is empty: it must end after it starts." in same
    assert "ends before it starts" not in same
    before = client.get("/staff/occupancy/?cls=C&hour_start=9&hour_end=5").content.decode()
    assert "The hour range ends before it starts." in before
