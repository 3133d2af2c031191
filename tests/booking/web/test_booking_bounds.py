"""Holds are bounded and every booking is reachable: one live hold per buyer (a new one replaces
the old, from any session or worker), a cap on the slots one hold or booking takes, logout gives
the hold back, a claim reads only the holds its days touch; "My bookings" pages through all."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.keys import RoomKeys, hold_of
from booking.domain.parser import InvalidRequest
from booking.domain.rules import booking_new_id, hold_new_id
from booking.engine.bookings import bookings_page, hold_get
from booking.engine.claims import booking_claim
from booking.engine.holds import booking_hold
from tests.booking_support import BUYER, NOW, SECOND_BUYER, claim, request, snapshot
from tests.store_support import commands_run, stats_reset

B_8_12 = {"cls": "B", "room": "7", "start": "8", "end": "12", "date": "2026-12-08"}
C_9_10 = {"cls": "C", "room": "9", "start": "9", "end": "10", "box": "1", "date": "2026-12-09"}


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def held_by_post(client: Client, data: dict[str, str]) -> str:
    response = client.post("/book/hold/", data)
    assert response.status_code == 302, response.content[:300]
    return str(response["Location"]).rstrip("/").rsplit("/", 1)[-1]


def live_holds(r: redis.Redis, rooms: range = range(1, 301)) -> list[str]:
    pipe = r.pipeline(transaction=False)
    for room in rooms:
        pipe.hkeys(RoomKeys(room).holds)
    return sorted(i for ids in pipe.execute() for i in ids)


def test_a_second_hold_from_a_second_session_replaces_the_first(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    phone, laptop = client_for(buyer), client_for(buyer)
    first = held_by_post(phone, B_8_12)
    second = held_by_post(laptop, C_9_10)
    assert hold_get(client=r, hold_id=first) is None
    assert hold_get(client=r, hold_id=second) is not None
    assert live_holds(r) == [second]
    assert r.get(hold_of(str(buyer.id))) == second
    # The first hold's slots are free again for anyone, and its day entries are gone.
    assert r.zcard(RoomKeys(7).hold_days) == 0
    assert client_for(second_buyer).post("/book/hold/", B_8_12).status_code == 302


def test_holds_placed_at_once_by_one_buyer_leave_one_live_hold(r: redis.Redis) -> None:
    def place(room: int) -> bool:
        req = request("B", room=room, dates=(5,), hour_start=8, hour_end=9)
        return booking_hold(
            client=r, owner_id=BUYER, request=req, hold_id=hold_new_id(room=room), now=NOW
        ).ok

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(place, range(20, 52)))
    left = live_holds(r)
    assert left == [r.get(hold_of(BUYER))]


def test_other_buyers_holds_stay(r: redis.Redis) -> None:
    mine = request("B", room=7, dates=(5,), hour_start=8, hour_end=9)
    theirs = request("B", room=7, dates=(5,), hour_start=10, hour_end=11)
    assert booking_hold(client=r, owner_id=BUYER, request=mine, hold_id=hold_new_id(room=7)).ok
    kept = hold_new_id(room=7)
    assert booking_hold(client=r, owner_id=SECOND_BUYER, request=theirs, hold_id=kept).ok
    again = hold_new_id(room=7)
    assert booking_hold(
        client=r,
        owner_id=BUYER,
        request=theirs.__class__("B", 7, mine.dates, (12, 13)),
        hold_id=again,
    ).ok
    assert live_holds(r) == sorted([kept, again])


def test_a_hold_over_the_slot_cap_is_refused_with_a_message_and_writes_nothing(
    r: redis.Redis, client_for: Any, buyer: Any, settings: Any
) -> None:
    client = client_for(buyer)
    client.get("/book/")  # the session exists before the snapshot
    before = snapshot(r)
    whole_day: dict[str, Any] = {"cls": "C", "room": "9", "start": "0", "end": "24"}
    whole_day |= {"date": ["2026-12-09"], "box": [str(b) for b in range(1, 101)]}
    assert client.post("/book/hold/", whole_day).status_code == 302  # 2,400: at the cap
    after_first = snapshot(r)
    assert after_first != before
    two_days = {**whole_day, "date": ["2026-12-09", "2026-12-10"]}
    response = client.post("/book/hold/", two_days)
    assert response.status_code == 400
    page = response.content.decode()
    assert re.search(r"takes 4,800 slots; one booking or hold takes at most 2,400", page)
    assert snapshot(r) == after_first
    settings.STRONGROOM_MAX_SLOTS = 10
    with pytest.raises(InvalidRequest, match="at most 10"):
        claim(r, request("B", room=30, dates=(5, 6), hour_start=0, hour_end=6))
    assert snapshot(r) == after_first


def test_logout_gives_the_hold_back(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    client = client_for(buyer)
    held = held_by_post(client, B_8_12)
    assert client.post("/accounts/logout/").status_code == 302
    assert hold_get(client=r, hold_id=held) is None
    assert not r.exists(hold_of(str(buyer.id)))
    assert live_holds(r) == []
    assert client_for(second_buyer).post("/book/hold/", B_8_12).status_code == 302


def test_a_claim_reads_only_the_holds_that_touch_its_days(r: redis.Redis) -> None:
    # 60 buyers hold hours on days 10..15 of room 7; a claim for day 3 reads none of them.
    for n in range(60):
        req = request(
            "C",
            room=7,
            dates=(10 + n % 6,),
            hour_start=n % 24,
            hour_end=n % 24 + 1,
            boxes=[n % 100 + 1],
        )
        owner = f"holder{n}"
        assert booking_hold(client=r, owner_id=owner, request=req, hold_id=hold_new_id(room=7)).ok
    stats_reset(r)
    assert claim(r, request("C", room=7, dates=(3,), hour_start=8, hour_end=9, boxes=[1])).ok
    ran = commands_run(r)
    assert "hgetall" not in ran  # the reply is the record as written: nothing is scanned
    assert ran["hmget"] == 1  # the room's stats only: no hold touches day 3, none is read
    # One hold on the claim's day: that one is read (one HMGET), and it refuses the slot.
    blocker = request("C", room=7, dates=(4,), hour_start=8, hour_end=9, boxes=[1])
    assert booking_hold(
        client=r, owner_id="holder-x", request=blocker, hold_id=hold_new_id(room=7)
    ).ok
    stats_reset(r)
    refused = claim(r, request("C", room=7, dates=(4,), hour_start=8, hour_end=9, boxes=[1]))
    assert not refused.ok and all(slot.held for slot in refused.taken)
    assert commands_run(r)["hmget"] == 1  # that hold (refused: the stats are not read)


def test_a_buyer_with_55_bookings_sees_and_cancels_the_oldest(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    me = str(buyer.id)
    made = []
    for n in range(55):  # rooms 1..55, days 2..30: none has begun
        booking = claim(r, request("A", room=n + 1, dates=(2 + n % 29,)), owner=me).booking
        assert booking is not None
        made.append(booking)
    client = client_for(buyer)
    shown: list[str] = []
    page_number = 1
    while True:
        page = client.get("/book/mine/", {"page": page_number}).content.decode()
        shown += re.findall(r'href="/book/done/([0-9]{3}-[0-9a-z]+)/"', page)
        if 'rel="next"' not in page:
            break
        page_number += 1
    assert page_number == 3
    assert sorted(shown) == sorted(b.id for b in made)
    # Upcoming first, soonest first.
    order = [min(b.dates) for b in sorted(made, key=lambda b: shown.index(b.id))]
    assert order == sorted(order)
    oldest = made[0]
    response = client.get(f"/book/mine/{oldest.id}/cancel/")
    assert response.status_code == 200
    form = re.search(r'name="request_id" value="([^"]+)"', response.content.decode())
    assert form is not None
    done = client.post(f"/book/mine/{oldest.id}/cancel/", {"request_id": form.group(1)})
    assert done.status_code == 302
    after = bookings_page(client=r, owner_id=me, today=NOW.date(), limit=100)
    assert after.total == 55
    assert [b.status for b in after.bookings if b.id == oldest.id] == ["cancelled"]


def test_earlier_bookings_come_after_the_upcoming_ones_newest_first(r: redis.Redis) -> None:
    for n in (3, 9, 6):
        assert claim(r, request("A", room=n, dates=(n,))).ok
    page = bookings_page(client=r, owner_id=BUYER, today=dt.date(2026, 12, 7), limit=2)
    assert [b.dates[0].day for b in page.bookings] == [9, 6] and page.upcoming == 1
    rest = bookings_page(client=r, owner_id=BUYER, today=dt.date(2026, 12, 7), limit=2, offset=2)
    assert [b.dates[0].day for b in rest.bookings] == [3] and not rest.has_next


def test_holding_again_and_again_cannot_keep_a_room_from_everyone(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    ttl = dt.timedelta(minutes=10)
    season = request("A", room=30, dates=range(10, 20))

    def hold_at(at: dt.datetime, owner: str = BUYER, room: int = 30) -> Any:
        req = season if room == 30 else request("A", room=room, dates=(5,))
        return booking_hold(
            client=r,
            owner_id=owner,
            request=req,
            hold_id=hold_new_id(room=room),
            ttl_seconds=600,
            now=at,
        )

    first = hold_at(NOW)
    assert first.hold is not None and first.hold.expires_at == NOW + ttl
    # Holding the same slots again keeps the first hold's end: no fresh ten minutes.
    again = hold_at(NOW + dt.timedelta(minutes=9))
    assert again.hold is not None and again.hold.expires_at == NOW + ttl
    # Then for one hold time the room is everyone else's: another buyer books the slots.
    cooling = hold_at(NOW + ttl + dt.timedelta(seconds=1))
    assert not cooling.ok and cooling.cooling_until == NOW + 2 * ttl
    won = booking_claim(
        client=r,
        owner_id=SECOND_BUYER,
        request=request("A", room=30, dates=(10,)),
        booking_id=booking_new_id(room=30),
        now=NOW + ttl + dt.timedelta(seconds=2),
    )
    assert won.ok
    # Other rooms are not held back, and after the pause the buyer may hold here again.
    assert hold_at(NOW + ttl + dt.timedelta(seconds=3), room=31).ok
    assert hold_at(NOW + 2 * ttl).taken  # day 10 is booked now: refused as taken, not cooling
    later = booking_hold(
        client=r,
        owner_id=BUYER,
        request=request("A", room=30, dates=(11,)),
        hold_id=hold_new_id(room=30),
        ttl_seconds=600,
        now=NOW + 2 * ttl,
    )
    assert later.hold is not None and later.hold.expires_at == NOW + 3 * ttl


def test_a_booking_ends_the_hold_time_and_the_page_says_when_to_come_back(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    browser = client_for(buyer)
    held = held_by_post(browser, B_8_12)
    confirm = {**B_8_12, "hold_id": held, "booking_id": booking_new_id(room=7)}
    assert browser.post("/book/claim/", confirm).status_code == 302
    with time_machine.travel(NOW + dt.timedelta(minutes=11), tick=False):
        # Booked: holding in the same room starts afresh.
        other_hours = {**B_8_12, "start": "14", "end": "16"}
        second = held_by_post(browser, other_hours)
    with time_machine.travel(NOW + dt.timedelta(minutes=22), tick=False):
        # That hold ran its whole time unbooked: the room is everyone else's for a while.
        response = browser.post("/book/hold/", {**B_8_12, "start": "18", "end": "20"})
        assert response.status_code == 409
        assert "you can hold here again from 10:31" in response.content.decode()
    assert second
