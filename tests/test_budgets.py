"""Store round trips of every page: the one table of budgets for the whole site.

Each page is requested through Django's test client (the full middleware stack: session,
person, visit records) and its round trips are counted with `strongroom.store.round_trips()`.
A page over its budget fails the suite whatever the machine's speed; a budget is a ceiling, set
to what the page takes today. Where a page lists things (my bookings, dashboard tables), it is
also measured with ten times more data: the count must not grow with the data.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.claims import booking_claim
from booking.parser import slot_request_parse
from booking.rules import booking_new_id
from catalog.demo import load_demo as load_catalog
from strongroom.store import round_trips
from tests.booking_support import NOW
from tests.conftest import ON_CLUSTER, Someone, person_make

# Budgets: page -> the most store round trips one request may take. The middleware's share of
# a signed-in request: session read (1), person read (1), visit record (1, GET pages).
BUDGETS: dict[str, int] = {
    # The site and accounts
    "home, anonymous": 1,  # the visit record
    "home, signed in": 3,
    "login page": 1,
    "sign-up page": 1,
    "own account page": 4,
    "healthz": 1,  # PING
    # Booking (a claim is 2: FCALL + WAITAOF in one pipeline, then the index pipeline)
    "booking page, empty": 3,
    "booking page, class C picked": 3,
    "booking page, anonymous": 2,
    "calendar fragment": 4,
    "panel fragment": 3,
    "my bookings (3)": 5,
    "my bookings (30)": 5,
    "booking done page": 4,
    "pickup page": 1,
    "pickup POST, wrong code": 2,
    "hold POST": 5,
    "confirm page": 4,
    "booking POST": 4,
    # the refusal re-renders the booking page, which names the taken slots and reads the
    # nearby rooms for the closest free alternatives (one more read, only when blocked)
    "booking POST, slot taken": 5,
    "booking page, choice taken (alternatives)": 4,
    "panel fragment, polled, nothing new (204)": 3,
    # The building map: every room's bitmap bytes and holds in one pipeline (1), whatever is
    # booked or held, with or without a class C room's box grid open
    "building map, class C, signed in": 3,  # as the booking page
    "building map, class C, anonymous": 2,
    "building map, class C with a room's grid": 3,
    "building map, class A, 7 days": 3,
    "building map results fragment (polled)": 3,  # session, person, the map
    # Catalog
    "catalog browse": 3,
    "catalog, 2 tags": 3,
    "catalog, AND/OR/NOT": 3,
    "book detail": 2,
    "catalog staff list": 5,
    # Dashboard (staff)
    # overview: the rooms' stats counters (1), today's bookings (index, records: 2), visits (1),
    # names (1), whatever the number of bookings
    "dashboard overview": 6,
    "dashboard overview (30 bookings)": 6,
    "dashboard occupancy": 4,
    "dashboard bookings": 6,
    "dashboard bookings (30 bookings)": 6,
    "dashboard booking detail": 6,
    "dashboard people": 5,
    "dashboard person detail": 7,
    "dashboard person detail (30 bookings)": 7,
    "dashboard catalog": 3,
    "dashboard keyspace": 6,  # SCAN pages: grows with the number of keys (staff only)
    "dashboard audit": 6,
    "dashboard bookings CSV": 5,
    "dashboard bookings iCalendar": 5,
}


# On a 3-primary cluster a pipeline costs one round trip per primary it reaches (that is how
# they are counted: one send per node). A pipeline over every room or every date-index shard
# reaches all three; one over a person and {people}, or a room and a person, reaches one or two.
# Each ceiling is what the page takes on the test cluster (fixed ids, so fixed slots).
CLUSTER_BUDGETS: dict[str, int] = {
    **BUDGETS,
    "healthz": 3,  # CLUSTER INFO on every primary
    "booking page, class C picked": 4,
    "panel fragment": 4,
    "my bookings (3)": 7,  # the records of rooms on several primaries
    "my bookings (30)": 7,
    "booking POST": 5,  # the index pipeline: the person's index and the date shard
    "dashboard overview": 9,  # every room's counters: one round trip per primary
    "dashboard overview (30 bookings)": 9,
    "dashboard occupancy": 5,
    "dashboard bookings": 9,  # every date-index shard, then the records
    "dashboard bookings (30 bookings)": 9,
    "dashboard keyspace": 11,  # SCAN on every primary
    "dashboard audit": 7,
    "dashboard bookings CSV": 9,
    "dashboard bookings iCalendar": 9,
}


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


@dataclass
class Site:
    """Clients and the ids the pages need."""

    anonymous: Client
    buyer: Client
    staff: Client
    buyer_person: Someone
    booking_id: str
    book_id: str


def _bookings_for(client: redis.Redis, owner: Someone, count: int, first_room: int) -> list[str]:
    ids = []
    for n in range(count):
        room = first_room + n
        req = slot_request_parse(cls="A", room=room, dates=[dt.date(2026, 12, 5 + n % 20)])
        made = booking_claim(
            client=client, owner_id=str(owner.id), request=req, booking_id=booking_new_id(room=room)
        )
        assert made.ok
        ids.append(made.booking.id)  # type: ignore[union-attr]
    return ids


@pytest.fixture
def site(r: redis.Redis, client_for: Callable[[Someone], Client]) -> Site:
    buyer = person_make(r, "budget_buyer")
    staff = person_make(r, "budget_staff", is_staff=True)
    load_catalog(r)
    book_id = r.srandmember(_books_key())
    ids = _bookings_for(r, buyer, 3, first_room=10)
    return Site(Client(), client_for(buyer), client_for(staff), buyer, ids[0], str(book_id))


def _books_key() -> str:
    from strongroom.keyspace import CATALOG_BOOKS

    return CATALOG_BOOKS.key()


def count(make: Callable[[], Any], *, expect: int = 200) -> int:
    """Round trips of one request (after one warm-up request of the same kind)."""
    make()
    with round_trips() as trips:
        response = make()
    assert response.status_code == expect, (response.status_code, response.content[:300])
    return trips.count


def csrf_of(client: Client, path: str) -> str:
    page = client.get(path).content.decode()
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert match
    return match.group(1)


def check(name: str, trips: int) -> None:
    budgets = CLUSTER_BUDGETS if ON_CLUSTER else BUDGETS
    if os.environ.get("STRONGROOM_MEASURE_BUDGETS"):
        print(f"BUDGET {name!r}: {trips}")
        return
    assert name in budgets, f"no budget for {name}: it took {trips} round trips"
    assert trips <= budgets[name], f"{name}: {trips} round trips, budget {budgets[name]}"


def test_site_pages_stay_within_their_round_trip_budgets(site: Site) -> None:
    check("home, anonymous", count(lambda: site.anonymous.get("/")))
    check("home, signed in", count(lambda: site.buyer.get("/")))
    check("login page", count(lambda: site.anonymous.get("/accounts/login/")))
    check("sign-up page", count(lambda: site.anonymous.get("/accounts/signup/")))
    check("own account page", count(lambda: site.buyer.get("/accounts/me/")))
    check("healthz", count(lambda: site.anonymous.get("/healthz")))


def test_booking_pages_stay_within_their_round_trip_budgets(site: Site, r: redis.Redis) -> None:
    picked = "?cls=C&room=42&box=7&start=10&end=12&date=2026-12-16&month=2026-12"
    check("booking page, empty", count(lambda: site.buyer.get("/book/")))
    check("booking page, class C picked", count(lambda: site.buyer.get("/book/" + picked)))
    check("booking page, anonymous", count(lambda: site.anonymous.get("/book/" + picked)))
    htmx = {"HX-Request": "true"}
    check(
        "calendar fragment",
        count(
            lambda: site.buyer.get(
                "/book/parts/calendar/?cls=C&room=42&month=2026-12", headers=htmx
            )
        ),
    )
    check(
        "panel fragment", count(lambda: site.buyer.get("/book/parts/panel/" + picked, headers=htmx))
    )
    check("my bookings (3)", count(lambda: site.buyer.get("/book/mine/")))
    check("booking done page", count(lambda: site.buyer.get(f"/book/done/{site.booking_id}/")))
    check("pickup page", count(lambda: site.anonymous.get("/book/pickup/")))

    hours = iter(range(0, 24))

    def hold() -> Any:
        hour = next(hours)
        form = {"cls": "B", "room": "9", "start": str(hour), "end": str(hour + 1)}
        return site.buyer.post("/book/hold/", {**form, "date": "2026-12-08"})

    check("hold POST", count(hold, expect=302))
    confirm = hold()["Location"]
    check("confirm page", count(lambda: site.buyer.get(confirm)))

    rooms = iter(range(100, 200))

    def claim() -> Any:
        room = next(rooms)
        form = {"cls": "C", "room": str(room), "start": "9", "end": "10", "box": "5"}
        form |= {"date": "2026-12-09", "booking_id": booking_new_id(room=room)}
        return site.buyer.post("/book/claim/", form)

    check("booking POST", count(claim, expect=302))
    taken = {"cls": "C", "room": "100", "start": "9", "end": "10", "box": "5"}
    taken |= {"date": "2026-12-09"}
    check(
        "booking POST, slot taken",
        count(
            lambda: site.buyer.post(
                "/book/claim/", {**taken, "booking_id": booking_new_id(room=100)}
            ),
            expect=409,
        ),
    )
    check(
        "pickup POST, wrong code",
        count(lambda: site.anonymous.post("/book/pickup/", {"room": "010", "code": "AAAAA-BBBBB"})),
    )
    # Ten times the bookings: the same round trips.
    _bookings_for(r, site.buyer_person, 27, first_room=200)
    check("my bookings (30)", count(lambda: site.buyer.get("/book/mine/")))


def test_catalog_pages_stay_within_their_round_trip_budgets(site: Site) -> None:
    check("catalog browse", count(lambda: site.anonymous.get("/catalog/")))
    check("catalog, 2 tags", count(lambda: site.anonymous.get("/catalog/?all=web&all=ruby")))
    check(
        "catalog, AND/OR/NOT",
        count(lambda: site.anonymous.get("/catalog/?all=web&any=ruby,python&not=java")),
    )
    check("book detail", count(lambda: site.anonymous.get(f"/catalog/book/{site.book_id}/")))
    check("catalog staff list", count(lambda: site.staff.get("/staff/catalog/books/")))


def test_dashboard_pages_stay_within_their_round_trip_budgets(site: Site, r: redis.Redis) -> None:
    pages = {
        "dashboard overview": "/staff/",
        "dashboard occupancy": "/staff/occupancy/",
        "dashboard bookings": "/staff/bookings/",
        "dashboard booking detail": f"/staff/bookings/{site.booking_id}/",
        "dashboard people": "/staff/people/",
        "dashboard person detail": f"/staff/people/{site.buyer_person.id}/",
        "dashboard catalog": "/staff/catalog/",
        "dashboard keyspace": "/staff/keyspace/",
        "dashboard audit": "/staff/audit/",
        "dashboard bookings CSV": "/staff/bookings/export.csv",
        "dashboard bookings iCalendar": "/staff/bookings/export.ics",
    }
    for name, path in pages.items():
        check(name, count(functools.partial(site.staff.get, path)))
    _bookings_for(r, site.buyer_person, 27, first_room=200)
    for name in ("dashboard overview", "dashboard bookings", "dashboard person detail"):
        check(f"{name} (30 bookings)", count(functools.partial(site.staff.get, pages[name])))


def test_the_building_map_is_one_read_of_the_store(site: Site, r: redis.Redis) -> None:
    """The map's own share is one round trip (the rest is the middleware's), however many rooms
    are booked or held: measured empty and again after 300 bookings and a hold."""
    c_map = "/book/find/?cls=C&date=2026-12-16&start=10&end=12"
    htmx = {"HX-Request": "true"}

    def measure() -> None:
        check("building map, class C, signed in", count(lambda: site.buyer.get(c_map)))
        check("building map, class C, anonymous", count(lambda: site.anonymous.get(c_map)))
        check(
            "building map, class C with a room's grid",
            count(lambda: site.buyer.get(c_map + "&room=42")),
        )
        week = "/book/find/?cls=A&date=2026-12-10&days=7"
        check("building map, class A, 7 days", count(lambda: site.buyer.get(week)))
        part = "/book/find/parts/results/?cls=C&date=2026-12-16&start=10&end=12"
        check(
            "building map results fragment (polled)",
            count(lambda: site.buyer.get(part, headers=htmx | {"X-Strongroom-Refresh": "1"})),
        )

    measure()
    for room in range(1, 301):
        req = slot_request_parse(
            cls="C", room=room, dates=[dt.date(2026, 12, 16)], hour_start=10, hour_end=11,
            boxes=[room % 100 + 1],
        )  # fmt: skip
        made = booking_claim(
            client=r, owner_id="77", request=req, booking_id=booking_new_id(room=room)
        )
        assert made.ok
    measure()


def test_a_blocked_choice_and_a_refresh_stay_within_their_budgets(
    site: Site, r: redis.Redis
) -> None:
    """The honest summary's alternatives cost one read; a refresh that finds nothing new is
    the panel's read and no visit record."""
    req = slot_request_parse(
        cls="C", room=42, dates=[dt.date(2026, 12, 16)], hour_start=10, hour_end=12, boxes=[7]
    )
    made = booking_claim(client=r, owner_id="77", request=req, booking_id=booking_new_id(room=42))
    assert made.ok
    picked = "?cls=C&room=42&box=7&start=10&end=12&date=2026-12-16"
    page = site.buyer.get("/book/" + picked).content.decode()
    assert "Not free as chosen" in page and 'id="alternatives"' in page
    check(
        "booking page, choice taken (alternatives)",
        count(lambda: site.buyer.get("/book/" + picked)),
    )
    stamp = re.search(r"seen=([0-9a-f]{16})", page)
    assert stamp is not None
    refresh = {"HX-Request": "true", "X-Strongroom-Refresh": "1"}
    part = f"/book/parts/panel/{picked}&seen={stamp.group(1)}"
    check(
        "panel fragment, polled, nothing new (204)",
        count(lambda: site.buyer.get(part, headers=refresh), expect=204),
    )
