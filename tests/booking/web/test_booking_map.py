"""The building map (/book/find/): one read of every room, its classification (free, partly
free, held with the hold's end, sold out), the page's links and filters, and bad input."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.rules import calendar_day, hold_new_id
from booking.engine.closures import Closure, closure_add, closure_new_id
from booking.engine.holds import booking_hold
from booking.slots.building_map import BuildingMap, RoomState, building_map_read
from strongroom.store import round_trips
from tests.booking_support import NOW, claim, day, request
from tests.store_support import identity_trips, rooms_trips

ALL_ROOMS = range(1, 301)
EVERY_BOX = list(range(1, 101))


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def hold(client: redis.Redis, owner: str = "202", **kwargs: object) -> dt.datetime:
    req = request(**kwargs)  # type: ignore[arg-type]
    made = booking_hold(
        client=client, owner_id=owner, request=req, hold_id=hold_new_id(room=req.room), now=NOW
    )
    assert made.ok and made.hold is not None
    return made.hold.expires_at


def states(
    client: redis.Redis,
    cls: str,
    hours: tuple[int, int] | None,
    dates: tuple[int, ...] = (12,),
    **kw: Any,
) -> tuple[BuildingMap, dict[int, RoomState]]:
    bmap = building_map_read(
        client=client, cls=cls, dates=[day(d) for d in dates], hours=hours, rooms=ALL_ROOMS,
        now=NOW, **kw,
    )  # fmt: skip
    return bmap, {s.room: s for s in bmap.rooms}


def test_the_whole_class_c_map_of_a_day_is_one_round_trip(r: redis.Redis) -> None:
    claim(r, request("C", room=5, dates=(12,), hour_start=8, hour_end=10, boxes=[1, 2]))
    with round_trips() as trips:
        bmap, _ = states(r, "C", (8, 10), grid_room=5)
    assert trips.count == rooms_trips(r, ALL_ROOMS)  # one pipeline: 1 per primary it reaches
    assert len(bmap.rooms) == 300 and len(bmap.grid) == 100


def test_class_c_rooms_are_free_partly_free_held_or_sold_out(r: redis.Redis) -> None:
    claim(r, request("C", room=5, dates=(12,), hour_start=9, hour_end=10, boxes=[3, 4]))
    claim(r, request("C", room=6, dates=(12,), hour_start=8, hour_end=10, boxes=EVERY_BOX))
    claim(r, request("C", room=8, dates=(12,), hour_start=8, hour_end=9, boxes=list(range(1, 51))))
    until = hold(r, cls="C", room=8, dates=(12,), hour_start=9, hour_end=10, boxes=EVERY_BOX[50:])
    claim(r, request("C", room=9, dates=(12,), hour_start=10, hour_end=12, boxes=EVERY_BOX))
    bmap, rooms = states(r, "C", (8, 10))
    assert (rooms[5].state, rooms[5].free, rooms[5].first_box) == ("partly", 98, 1)
    assert rooms[6].state == "sold_out" and rooms[6].free == 0 and rooms[6].held == 0
    assert rooms[8].state == "held" and rooms[8].held == 50 and rooms[8].held_until == until
    assert rooms[9].state == "free"  # booked only outside the chosen hours
    assert bmap.count("free") == 297 and bmap.count("sold_out") == 1


def test_a_buyers_own_hold_reads_free_for_them(r: redis.Redis) -> None:
    hold(r, owner="202", cls="B", room=4, dates=(12,), hour_start=8, hour_end=10)
    _, theirs = states(r, "B", (8, 10), owner_id="202")
    _, others = states(r, "B", (8, 10), owner_id="303")
    assert theirs[4].state == "free"
    assert others[4].state == "held" and others[4].held == 2


def test_class_b_counts_the_free_hours_of_the_range(r: redis.Redis) -> None:
    claim(r, request("B", room=7, dates=(12,), hour_start=8, hour_end=10))
    _, rooms = states(r, "B", (6, 10))
    assert rooms[7].state == "partly" and rooms[7].free_hours == (6, 7)
    _, whole_day = states(r, "B", None)
    assert whole_day[7].free == 22 and whole_day[7].total == 24


def test_class_a_over_several_days(r: redis.Redis) -> None:
    claim(r, request("A", room=3, dates=(12,)))
    claim(r, request("A", room=4, dates=(12, 13)))
    _, rooms = states(r, "A", None, dates=(12, 13))
    assert (rooms[3].state, rooms[3].free) == ("partly", 1)
    assert rooms[4].state == "sold_out" and rooms[1].state == "free"


def test_the_box_grid_marks_each_box_hour(r: redis.Redis) -> None:
    claim(r, request("C", room=5, dates=(12,), hour_start=9, hour_end=10, boxes=[3]))
    until = hold(r, cls="C", room=5, dates=(12,), hour_start=8, hour_end=9, boxes=[4])
    bmap, _ = states(r, "C", (8, 10), grid_room=5)
    rows = {row.box: row for row in bmap.grid}
    assert [c.state for c in rows[3].cells] == ["free", "sold_out"]
    assert [c.state for c in rows[4].cells] == ["held", "free"]
    assert rows[4].cells[0].held_until == until
    assert rows[1].free_all and not rows[3].free_all


# --- the page --------------------------------------------------------------------------------


def page(client: Client, query: str) -> str:
    response = client.get("/book/find/" + query)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_the_map_page_lists_every_room_with_counts_and_links(r: redis.Redis) -> None:
    claim(r, request("C", room=6, dates=(12,), hour_start=8, hour_end=10, boxes=EVERY_BOX))
    html = page(Client(), "?cls=C&date=2026-12-12&start=8&end=10")
    assert "299 rooms free" in html and "1 room sold out" in html
    assert html.count('id="map-room-') == 300
    tile = re.search(r'id="map-room-006".*?</li>', html, re.S)
    assert tile and "Sold out" in tile.group(0)
    book = "/book/?cls=C&amp;room=7&amp;box=1&amp;start=8&amp;end=10&amp;date=2026-12-12"
    assert book in html


def test_a_held_room_says_until_when_in_the_sites_time(r: redis.Redis) -> None:
    hold(r, cls="A", room=9, dates=(12,))
    html = page(Client(), "?cls=A&date=2026-12-12")
    tile = re.search(r'id="map-room-009".*?</li>', html, re.S)
    assert tile and "Held until 10:10 Shanghai time" in tile.group(0)


def test_only_free_and_a_room_range_filter_the_rooms(r: redis.Redis) -> None:
    claim(r, request("A", room=12, dates=(12,)))
    html = page(Client(), "?cls=A&date=2026-12-12&from=10&to=20&free=1")
    assert html.count('id="map-room-') == 10 and 'id="map-room-012"' not in html
    # Typed the other way round: the same rooms, and the page says it read them so.
    turned = page(Client(), "?cls=A&date=2026-12-12&from=20&to=10")
    assert turned.count('id="map-room-') == 11 and 'id="map-room-021"' not in turned
    assert "rooms 10 to 20 are shown" in turned


def test_an_hour_range_given_by_one_end_says_the_whole_day_is_shown(r: redis.Redis) -> None:
    """?start=8 without an end showed the whole day (00:00 to 24:00) and said nothing; a
    reversed range had a word."""
    html = page(Client(), "?cls=B&date=2026-12-06&start=9")
    assert "From 09:00 without an end hour: the whole day is shown" in html
    html = page(Client(), "?cls=C&end=15")
    assert "To 15:00 without a start hour: the whole day is shown" in html
    reversed_range = page(Client(), "?cls=B&date=2026-12-06&start=9&end=8")
    assert "must end after it starts" in reversed_range and "without an end" not in reversed_range
    assert "without" not in page(Client(), "?cls=B&date=2026-12-06&start=9&end=12")


def test_a_room_closed_for_a_few_hours_is_partly_free_on_the_whole_day_map(
    r: redis.Redis,
) -> None:
    """Closed 09:00-12:00, room 12 showed "Closed: maintenance, 0 of 24 hours free" on the
    whole day's map while the same day's afternoon was free and its calendar said "Partly
    booked": the closed hours are not free, the others are."""
    closure = Closure(closure_new_id(), (12,), day(5), day(5), (9, 12), "maintenance")
    closure_add(client=r, actor_id="1", closure=closure)
    tile = room_tile(page(Client(), "?cls=B&date=2026-12-05"), "012")
    assert "Partly free" in tile and "21 of 24 hours free" in tile and "Closed" not in tile
    assert "some hours closed: maintenance" in tile
    tile = room_tile(page(Client(), "?cls=C&date=2026-12-05"), "012")
    assert "Partly free" in tile and "Closed" not in tile
    assert "some hours closed: maintenance" in tile
    assert "Book box" not in tile  # a whole day's booking of a box would be refused
    grid = page(Client(), "?cls=C&date=2026-12-05&room=12")
    assert "start=13&amp;end=14" in grid and "start=9&amp;end=10" not in grid
    # The closed hours alone, or a range inside them, are closed with the reason.
    closed = room_tile(page(Client(), "?cls=B&date=2026-12-05&start=9&end=12"), "012")
    assert "Closed: maintenance" in closed
    afternoon = room_tile(page(Client(), "?cls=B&date=2026-12-05&start=13&end=15"), "012")
    assert "Free" in afternoon
    # The booking page agrees: the day is partly booked, its closed hours taken.
    booking = Client().get("/book/?cls=B&room=12&date=2026-12-05").content.decode()
    assert re.search(r'value="2026-12-05".*?Partly', booking, re.S)
    assert re.search(r'id="hour-cell-9"[^>]*disabled', booking)
    assert not re.search(r'id="hour-cell-13"[^>]*disabled', booking)


def test_a_class_c_room_closed_at_every_chosen_hour_across_its_days_is_closed(
    r: redis.Redis,
) -> None:
    """Closed 09:00-10:00 on one chosen day and 10:00-11:00 on the other: no box can be booked
    09:00-11:00 on both, though neither closure covers the whole choice (it said "Partly free,
    100 of 100 boxes")."""
    for date, hours in ((5, (9, 10)), (6, (10, 11))):
        closure = Closure(closure_new_id(), (12,), day(date), day(date), hours, "maintenance")
        closure_add(client=r, actor_id="1", closure=closure)
    query = "?cls=C&date=2026-12-05&date=2026-12-06&start=9&end=11"
    tile = room_tile(page(Client(), query), "012")
    assert "Closed: maintenance" in tile and "Partly" not in tile


def room_tile(html: str, label: str) -> str:
    tile = re.search(rf'id="map-room-{label}".*?</li>', html, re.S)
    assert tile, label
    return tile.group(0)


def test_a_class_c_room_opens_its_box_grid(r: redis.Redis) -> None:
    claim(r, request("C", room=5, dates=(12,), hour_start=9, hour_end=10, boxes=[3]))
    html = page(Client(), "?cls=C&date=2026-12-12&start=8&end=10&room=5")
    grid = re.search(r'id="room-grid".*?</section>', html, re.S)
    assert grid is not None
    assert grid.group(0).count('<tr><th scope="row">') == 100
    assert "/book/?cls=C&amp;room=5&amp;box=3&amp;start=8&amp;end=9&amp;date=2026-12-12" in html
    assert 'id="grid-book-3"' not in html and 'id="grid-book-4"' in html


def test_a_multi_day_search_opens_a_grid_of_every_day_and_books_them_all(r: redis.Redis) -> None:
    """Three days asked: a cell sold on any of them is sold, and the grid's links book the same
    three days (a one-day link would book something other than what was searched)."""
    claim(r, request("C", room=5, dates=(13,), hour_start=9, hour_end=10, boxes=[3]))
    html = page(Client(), "?cls=C&date=2026-12-12&days=3&start=8&end=10&room=5")
    grid = re.search(r'id="room-grid".*?</section>', html, re.S)
    assert grid is not None
    assert "Dec. 12, 2026, Dec. 13, 2026, Dec. 14, 2026" in grid.group(0)
    days = "date=2026-12-12&amp;date=2026-12-13&amp;date=2026-12-14"
    assert f"/book/?cls=C&amp;room=5&amp;box=3&amp;start=8&amp;end=9&amp;{days}" in html
    assert "box=3&amp;start=9&amp;end=10" not in html  # sold on the 13th
    assert f"/book/?cls=C&amp;room=5&amp;box=4&amp;start=8&amp;end=10&amp;{days}" in html
    assert 'id="grid-book-3"' not in html and 'id="grid-book-4"' in html
    book = Client().get(f"/book/?cls=C&room=5&box=4&start=8&end=10&{days.replace('&amp;', '&')}")
    assert book.status_code == 200


def test_the_map_speaks_chinese(r: redis.Redis) -> None:
    client = Client(headers={"accept-language": "zh-hans"})
    html = page(client, "?cls=C&date=2026-12-12&start=8&end=10")
    assert "300 个房间有空" in html or "300" in html
    assert "上海时间" in html
    # Each room named as every other page names it.
    assert ">001 号房间<" in html and ">房间 001<" not in html


@pytest.mark.parametrize(
    "query",
    [
        "?cls=Z&date=2026-12-12",
        "?cls=C&date=2026-13-45",
        "?cls=C&date=%7B%7D*&start=25&end=-1",
        "?cls=C&date=2026-12-12&from=abc&to=%F0%9F%92%A5",
        "?cls=C&date=2026-12-12&room=999",
        "?cls=C&date=2026-12-12&days=99",
        "?cls=C&date=2026-11-01",
        "?cls=A&date=" + "9" * 5000,
        "?cls=C&date=2026-12-12&start=10&end=8",
        "?cls=C&date=2026-12-12&from=200&to=100",
        "?cls=B&date=2026-12-12&date=2026-12-13&date=2026-12-14&date=2026-12-15&date=2026-12-16"
        "&date=2026-12-17&date=2026-12-18&date=2026-12-19",
    ],
)
def test_hostile_map_queries_get_a_message_never_a_500(r: redis.Redis, query: str) -> None:
    response = Client().get("/book/find/" + query)
    assert response.status_code == 200
    assert 'class="errorlist"' in response.content.decode()
    fragment = Client().get("/book/find/parts/results/" + query)
    assert fragment.status_code == 200


def test_the_home_page_and_booking_page_link_to_the_map(r: redis.Redis) -> None:
    assert 'href="/book/find/"' in Client().get("/").content.decode()
    assert 'href="/book/find/"' in Client().get("/book/").content.decode()


def test_a_refresh_that_finds_nothing_new_is_an_empty_204(r: redis.Redis) -> None:
    query = "?cls=C&date=2026-12-12&start=8&end=10"
    refresh = {"X-Strongroom-Refresh": "1", "HX-Request": "true"}
    html = page(Client(), query)
    seen = re.search(r"seen=([A-Za-z0-9_-]+)", html)
    assert seen is not None
    part = f"/book/find/parts/results/{query}&seen={seen.group(1)}"
    again = Client().get(part, headers=refresh)
    assert again.status_code == 204 and again.content == b""
    claim(r, request("C", room=6, dates=(12,), hour_start=8, hour_end=9, boxes=[4]))
    changed = Client().get(part, headers=refresh)
    assert changed.status_code == 200
    assert "99 of 100 boxes free" in changed.content.decode()


def test_a_refresh_is_not_counted_as_a_page_view(r: redis.Redis) -> None:
    """Neither a refresh nor any other htmx fragment is a page view; the map page itself is."""
    from accounts.selectors import visits_today
    from accounts.visits import visits_flush

    def views() -> int:
        visits_flush()  # the worker's batch, written (a served site does it every second)
        return visits_today(client=r).views

    query = "/book/find/parts/results/?cls=C&date=2026-12-12&start=8&end=10"
    before = views()
    for _ in range(3):
        Client().get(query, headers={"X-Strongroom-Refresh": "1", "HX-Request": "true"})
    Client().get(query, headers={"HX-Request": "true"})  # a fragment asked for: no page either
    assert views() == before
    Client().get("/book/find/?cls=C&date=2026-12-12&start=8&end=10")  # the control: the page
    assert views() == before + 1


@pytest.fixture
def kept_maps(settings: Any) -> Iterator[list[float]]:
    """Maps kept for a minute, on a clock the test moves (a one-item list of seconds)."""
    from booking.web.find import RECENT_MAPS

    settings.STRONGROOM_MAP_CACHE_MS = 60_000
    moment = [0.0]
    RECENT_MAPS.clear()
    real_clock, RECENT_MAPS.clock = RECENT_MAPS.clock, lambda: moment[0]
    yield moment
    RECENT_MAPS.clock = real_clock
    RECENT_MAPS.clear()


def test_buyers_share_a_kept_map_that_costs_them_the_identity_read_only(
    r: redis.Redis, kept_maps: list[float], client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    query = "?cls=C&date=2026-12-12&start=8&end=10"
    first = page(client_for(buyer), query)
    claim(r, request("C", room=6, dates=(12,), hour_start=8, hour_end=10, boxes=EVERY_BOX))
    other = client_for(second_buyer)
    with round_trips() as trips:
        again = page(other, query)
    assert trips.count == identity_trips(r, other)  # the session and its person; the map is kept
    assert again.count('id="map-room-') == 300 and "300 rooms free" in again
    assert "300 rooms free" in first
    kept_maps[0] += 61  # older than its minute: read afresh
    assert "1 room sold out" in page(other, query)


def test_while_one_request_reads_an_old_map_again_the_workers_others_get_the_old_one(
    r: redis.Redis,
    kept_maps: list[float],
    client_for: Any,
    buyer: Any,
    second_buyer: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not every thread of a worker reads and lays out the same map at once when it gets old."""
    from booking.web import find

    query = "?cls=C&date=2026-12-12&start=8&end=10"
    assert "300 rooms free" in page(client_for(buyer), query)
    claim(r, request("C", room=6, dates=(12,), hour_start=8, hour_end=10, boxes=EVERY_BOX))
    kept_maps[0] += 61
    other, meanwhile = client_for(second_buyer), dict[str, Any]()
    read = find.map_read

    def reading_again(**how: Any) -> BuildingMap | None:
        with round_trips() as trips:  # another request while this one reads the map again
            meanwhile["page"] = page(other, query)
        meanwhile["trips"] = trips.count
        return read(**how)

    monkeypatch.setattr(find, "map_read", reading_again)
    assert "1 room sold out" in page(client_for(buyer), query)  # the one that reads it again
    assert "300 rooms free" in meanwhile["page"]  # the old one, as it was
    assert meanwhile["trips"] == identity_trips(r, other)
    monkeypatch.setattr(find, "map_read", read)
    assert "1 room sold out" in page(other, query)  # the new one, kept


def test_a_buyer_holding_slots_on_the_map_gets_it_read_afresh(
    r: redis.Redis, kept_maps: list[float], client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    query = "?cls=B&date=2026-12-12&start=8&end=10"
    assert "300 rooms free" in page(client_for(second_buyer), query)
    hold(r, owner=str(buyer.id), cls="B", room=4, dates=(12,), hour_start=8, hour_end=10)
    kept_maps[0] += 61
    others = page(client_for(second_buyer), query)  # read now: the hold is someone else's
    assert "299 rooms free" in others
    mine = client_for(buyer)
    with round_trips() as trips:
        theirs = page(mine, query)
    # not the kept map (their own hold reads free for them): the identity, then every room
    assert trips.count == identity_trips(r, mine) + rooms_trips(r, ALL_ROOMS)
    assert "300 rooms free" in theirs


def test_a_kept_maps_page_part_is_rendered_once_per_language_and_equals_a_fresh_one(
    r: redis.Redis, kept_maps: list[float], client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    query = "/book/find/?cls=C&date=2026-12-12&start=8&end=10"
    part = "booking/_map_content.html"
    fresh = client_for(buyer).get(query)  # nothing kept yet: the part is rendered
    assert part in [t.name for t in fresh.templates]
    kept = client_for(second_buyer).get(query)  # the kept map: its part is not rendered again
    assert part not in [t.name for t in kept.templates]
    main = re.compile(r"<main.*</main>", re.S)
    assert main.search(kept.content.decode()).group(0) == main.search(  # type: ignore[union-attr]
        fresh.content.decode()
    ).group(0)
    zh = client_for(second_buyer).get(query, headers={"accept-language": "zh-hans"})
    assert (
        part in [t.name for t in zh.templates] and "<h1>查找有空的宝物</h1>" in zh.content.decode()
    )
    kept_maps[0] += 61  # the map read afresh: its part too
    assert part in [t.name for t in client_for(buyer).get(query).templates]


# --- rough edges (issue 33, point 17) ----------------------------------------------------------


def test_the_empty_map_form_starts_with_a_class_and_the_first_bookable_day(r: redis.Redis) -> None:
    html = page(Client(), "")
    assert re.search(r'id="map-class-A" checked', html), "a class is chosen"
    assert 'id="map-date" name="date" min="2026-12-01" max="2026-12-31" value="2026-12-01"' in html
    assert html.count('id="map-room-') == 300, "and the rooms are shown at once"


def test_a_partly_free_rooms_link_over_several_days_preselects_its_free_days(
    r: redis.Redis,
) -> None:
    claim(r, request("A", room=3, dates=(12,)))
    html = page(Client(), "?cls=A&date=2026-12-12&days=3")
    tile = re.search(r'id="map-room-003".*?</li>', html, re.S)
    assert tile is not None
    link = re.search(r'href="(/book/[^"]+)"', tile.group(0))
    assert link is not None
    href = link.group(1).replace("&amp;", "&")
    assert "date=2026-12-13&date=2026-12-14" in href and "2026-12-12" not in href
    booking = Client().get(href).content.decode()
    assert "Not free as chosen" not in booking and "Log in to book" in booking


def test_a_partly_free_class_b_rooms_link_preselects_free_hours(r: redis.Redis) -> None:
    claim(r, request("B", room=3, dates=(13,), hour_start=8, hour_end=11))
    html = page(Client(), "?cls=B&date=2026-12-12&days=2&start=8&end=14")
    tile = re.search(r'id="map-room-003".*?</li>', html, re.S)
    assert tile is not None
    assert "room=3&amp;start=11&amp;end=14&amp;date=2026-12-12&amp;date=2026-12-13" in tile.group(0)


def test_a_class_b_room_free_on_some_days_only_is_partly_free_for_those_days(
    r: redis.Redis,
) -> None:
    """Not "sold out, 0 of 6 hours free" when the second day is free: no hour is free on both
    days, so it is partly free, and its link asks for the free day alone."""
    claim(r, request("B", room=3, dates=(12,), hour_start=8, hour_end=14))
    claim(r, request("B", room=4, dates=(12,), hour_start=8, hour_end=11))
    claim(r, request("B", room=4, dates=(13,), hour_start=11, hour_end=14))
    claim(r, request("B", room=5, dates=(12, 13), hour_start=8, hour_end=14))
    _, rooms = states(r, "B", (8, 14), dates=(12, 13))
    assert (rooms[3].state, rooms[3].free_days, rooms[3].free_hours) == (
        "partly", (calendar_day(day(13)),), (8, 9, 10, 11, 12, 13),
    )  # fmt: skip
    # Free hours on both days, but none on both: the first day's are offered.
    assert (rooms[4].state, rooms[4].free_hours) == ("partly", (11, 12, 13))
    assert rooms[4].free_days == (calendar_day(day(12)),) and rooms[4].free == 2
    assert rooms[3].free == 1
    assert rooms[5].state == "sold_out" and rooms[1].state == "free"
    html = page(Client(), "?cls=B&date=2026-12-12&days=2&start=8&end=14")
    tile = re.search(r'id="map-room-003".*?</li>', html, re.S)
    assert tile is not None and "Partly free" in tile.group(0)
    assert "free hours on 1 of 2 days" in tile.group(0)
    both = re.search(r'id="map-room-004".*?</li>', html, re.S)
    assert both is not None and "free hours on 2 of 2 days" in both.group(0)
    assert 'room=3&amp;start=8&amp;end=14&amp;date=2026-12-13"' in tile.group(0)
    query = "/book/find/?cls=B&date=2026-12-12&days=2&start=8&end=14"
    chinese = Client().get(query, headers={"Accept-Language": "zh-hans"}).content.decode()
    assert "2 天中 1 天有空闲时段" in chinese


def test_days_asked_past_the_seasons_end_are_said_to_be_cut(r: redis.Redis) -> None:
    html = page(Client(), "?cls=A&date=2026-12-30&days=7")
    assert "The season ends on Dec. 31, 2026: 2 days of the 7 asked are shown." in html
    assert "Class A on Dec. 30, 2026, Dec. 31, 2026" in html
    zh = page(Client(headers={"accept-language": "zh-hans"}), "?cls=A&date=2026-12-30&days=7")
    assert "本季于 2026年12月31日 结束：所选 7 天中只显示 2 天。" in zh
