"""The building map's live refresh sends only the rooms that changed (booking.web.find_refresh):
through HTTP, a page's token, a write, and what the refresh answers."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

import pytest
import redis
import time_machine
from django.test import Client

from tests.booking.web.test_booking_map import EVERY_BOX, hold
from tests.booking_support import NOW, claim, request

QUERY = "?cls=C&date=2026-12-12&start=8&end=10"
REFRESH = {"X-Strongroom-Refresh": "1", "HX-Request": "true"}
OOB = 'data-hx-swap-oob="true"'


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def poll_url(html: str) -> str:
    """The refresh URL the page (or the last refresh) polls."""
    found = re.search(r'id="map-poll" hidden data-hx-get="([^"]+)"', html)
    assert found is not None, "no poll"
    return found.group(1).replace("&amp;", "&")


def refreshed(url: str) -> tuple[int, str]:
    answer = Client().get(url, headers=REFRESH)
    return answer.status_code, answer.content.decode()


def rooms_in(html: str) -> list[str]:
    return re.findall(r'<li class="[a-z_]+" id="map-room-(\d{3})"', html)


def test_after_one_booking_the_refresh_sends_that_room_alone(r: redis.Redis) -> None:
    page = Client().get("/book/find/" + QUERY).content.decode()
    assert len(rooms_in(page)) == 300
    url = poll_url(page)
    assert refreshed(url) == (204, "")
    claim(r, request("C", room=6, dates=(12,), hour_start=8, hour_end=9, boxes=[4]))
    status, part = refreshed(url)
    assert status == 200 and rooms_in(part) == ["006"]
    tile = re.search(r'<li class="partly" id="map-room-006" ' + OOB + ".*?</li>", part)
    assert tile and "99 of 100 boxes free" in tile.group(0)
    assert f'id="map-counts" {OOB}' in part and "299 rooms free" in part
    assert 'id="map-results"' not in part and 'id="room-grid"' not in part
    assert len(part) < 3000  # the whole results are about 100 KB
    # the answer's own poll carries the new token: asked again, nothing is new
    assert refreshed(poll_url(part)) == (204, "")
    claim(r, request("C", room=250, dates=(12,), hour_start=8, hour_end=10, boxes=EVERY_BOX))
    status, part = refreshed(poll_url(part))
    assert status == 200 and rooms_in(part) == ["250"] and "Sold out" in part


def test_the_open_box_grid_is_sent_again_only_when_it_changed(r: redis.Redis) -> None:
    page = Client().get("/book/find/" + QUERY + "&room=5").content.decode()
    url = poll_url(page)
    claim(r, request("C", room=9, dates=(12,), hour_start=8, hour_end=9, boxes=[1]))
    status, part = refreshed(url)
    assert status == 200 and rooms_in(part) == ["009"] and 'id="room-grid"' not in part
    claim(r, request("C", room=5, dates=(12,), hour_start=9, hour_end=10, boxes=[3]))
    status, part = refreshed(poll_url(part))
    assert status == 200 and rooms_in(part) == ["005"]
    grid = re.search(r'<section id="room-grid" [^>]*' + OOB + ".*?</section>", part, re.S)
    assert grid and grid.group(0).count('<tr><th scope="row">') == 100
    assert 'id="grid-book-3"' not in part and 'id="grid-book-4"' in part


def test_a_hold_running_out_changes_its_room_without_any_write(r: redis.Redis) -> None:
    hold(r, cls="C", room=8, dates=(12,), hour_start=8, hour_end=10, boxes=EVERY_BOX)
    page = Client().get("/book/find/" + QUERY).content.decode()
    assert "Held until" in page
    url = poll_url(page)
    assert refreshed(url)[0] == 204
    with time_machine.travel(NOW + dt.timedelta(minutes=30), tick=False):
        status, part = refreshed(url)
    assert status == 200 and rooms_in(part) == ["008"] and "100 of 100 boxes free" in part


@pytest.mark.parametrize(
    "seen", ["", "abc", "A" * 1204, "*" * 1204, "%F0%9F%92%A5" * 200, "A" * 5000]
)
def test_a_token_not_of_this_map_gets_every_result(r: redis.Redis, seen: str) -> None:
    status, part = refreshed(f"/book/find/parts/results/{QUERY}&seen={seen}")
    assert status == 200 and len(rooms_in(part)) == 300
    assert f'id="map-results" class="map-results" {OOB}' in part and 'id="map-poll"' in part


def test_a_token_of_another_room_range_gets_every_result(r: redis.Redis) -> None:
    url = poll_url(Client().get("/book/find/" + QUERY).content.decode())
    status, part = refreshed(url.replace("?cls=C", "?from=101&to=200&cls=C"))
    assert status == 200 and len(rooms_in(part)) == 100 and 'id="map-results"' in part


def test_a_change_on_a_map_of_only_free_rooms_sends_every_result(r: redis.Redis) -> None:
    page = Client().get("/book/find/" + QUERY + "&free=1").content.decode()
    url = poll_url(page)
    assert refreshed(url)[0] == 204
    claim(r, request("C", room=6, dates=(12,), hour_start=8, hour_end=10, boxes=EVERY_BOX))
    status, part = refreshed(url)
    assert status == 200 and len(rooms_in(part)) == 299 and "006" not in rooms_in(part)


@pytest.mark.parametrize("seconds", [None, 2])
def test_open_pages_poll_at_the_live_refresh_setting(seconds: int | None, settings: object) -> None:
    """The map and the booking page ask again every STRONGROOM_POLL_SECONDS (5 s
    unless set; the served sites under test poll every second to see changes sooner)."""
    if seconds is not None:
        settings.STRONGROOM_POLL_SECONDS = seconds  # type: ignore[attr-defined]
    every = f'data-hx-trigger="every {seconds or 5}s"'
    page = Client().get("/book/find/" + QUERY).content.decode()
    assert re.search(r'id="map-poll" hidden [^>]*' + every, page)
    booking = Client().get("/book/?cls=C&room=6&date=2026-12-12&start=8&end=10&box=4")
    assert re.search(r'id="panel-refresh" hidden [^>]*' + every, booking.content.decode())
