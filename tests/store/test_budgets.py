"""Store round trips of every page: the one table of budgets for the whole site.

Each page is requested through Django's test client (the full middleware stack: session,
person, visit records) and its round trips are counted with `strongroom.store.round_trips()`.
A page over its budget fails the suite whatever the machine's speed; a budget is a ceiling, set
to what the page takes today. Where a page lists things (my bookings, dashboard tables), it is
also measured with ten times more data: the count must not grow with the data. On a cluster
(`STRONGROOM_TEST_STORE=cluster`) a pipeline costs one round trip per primary it reaches, and
CLUSTER_BUDGETS restates each page's budget pipeline by pipeline.
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
from django.conf import settings
from django.test import Client

from accounts.emails import reset_token_make
from accounts.services import calendar_token_new
from booking.domain.parser import slot_request_parse
from booking.domain.rules import booking_new_id
from booking.engine.bookings import booking_get
from booking.engine.claims import booking_claim
from catalog.demo import load_demo as load_catalog
from strongroom import store
from strongroom.outbox import mail_queue
from strongroom.store import round_trips
from tests.booking_support import NOW
from tests.conftest import CLUSTER_PRIMARIES, ON_CLUSTER, Someone, person_make
from tests.store_support import commands_run, keys_changed, session_trips

# Budgets: page -> the most store round trips one request may take. The middleware's share of
# a signed-in request is 1 (the session and its person in one pipeline); an anonymous request
# without a session cookie takes none. Page views cost none: they are counted in memory and
# written by the worker once a second (accounts/visits.py).
BUDGETS: dict[str, int] = {
    # The site and accounts
    "home, anonymous": 0,
    "home, signed in": 1,
    "login page": 0,
    "sign-up page": 0,
    # the account: identity (1); the person's fields with the bookings index and the waits
    # index (1; on one server not in cluster mode they ride with the identity:
    # test_read_ahead.py); the records (1); the waits' notices (only with waits)
    "own account page": 3,
    "healthz": 1,  # PING
    # Booking (a claim is 2: FCALL + WAITAOF in one pipeline, then the index pipeline)
    "booking page, empty": 1,
    "booking page, class C picked": 1,  # the room read ahead with the identity
    "booking page, anonymous": 1,
    "calendar fragment": 1,
    "panel fragment": 1,
    # my bookings: + the buyer's waits (1 when none; 1 more for their notices)
    "my bookings (3)": 4,
    "my bookings (30)": 4,
    "booking done page": 2,
    "pickup page": 0,
    # Pages of issue 14 (account, mail, calendars, waiting list)
    "forgot-password page": 0,
    "forgot-password POST": 3,  # the name (or address) lookup, the person, the outbox entry
    "password reset link": 2,  # the token check reads the person; the form reads the name
    # identity, the address read, the confirmation-mail limits, one write pipeline, the message
    "account email POST": 5,
    "calendar subscription": 3,  # the person's secret, the index, the records (no session)
    "my bookings with waits": 4,  # the waits' notices replace the (empty) records read
    # identity; the room, to say at once when it is free right now; the room's month, to mark
    # the days sold out or held in the day list
    "waiting-list page": 3,
    "waiting-list page, no day": 2,  # identity; the room's month
    # identity, the buyer's own bookings from that day (nobody waits for their own slot), the
    # buyer's place (bounded in one call), the wait function, the rooms with waits
    "waiting-list POST": 5,
    # the same for three days: the buyer's own bookings read once (1 when they have none
    # there), then the place, the wait and the rooms with waits of each day
    "waiting-list POST, three days": 1 + 1 + 3 * 3,
    "booking .ics": 2,
    "pickup POST, wrong code": 2,
    # identity, the buyer's pace (a buyer who may not book may not hold), the hold function with
    # the pointer, the pointer swapped with the previous hold's release
    "hold POST": 5,
    "confirm page": 2,
    # identity, the buyer's pace (bookings of the last hour), the claim, the index pipeline
    "booking POST": 4,
    # one server (`make run`): identity, then the claim (FCALL with the indexes and the buyer's
    # allowance + WAITAOF) in 1 round trip; refused, the room's read is one more
    "booking POST, one server": 2,
    "booking POST, slot taken, one server": 3,
    # the refused claim gives the pace entry back (a refusal uses up none of the allowance);
    # the refusal re-renders the booking page, which names the taken slots from the room's read
    # and links to the closest free alternatives (no neighbouring room is read)
    "booking POST, slot taken": 5,
    # identity with the chosen room; the buyer's own bookings from that day (named as theirs:
    # their records only when one is of this room); the nearby rooms
    "booking page, choice taken (alternatives)": 3,
    "panel fragment, polled, nothing new (204)": 1,
    # The building map: every room's bitmap bytes and holds in one pipeline (1), whatever is
    # booked or held, with or without a class C room's box grid open
    "building map, class C, signed in": 2,  # as the booking page
    "building map, class C, anonymous": 1,
    "building map, class C with a room's grid": 2,
    "building map, class A, 7 days": 2,
    "building map results fragment (polled)": 2,  # identity (one pipeline), the map
    # Catalog: asked again (the count follows a warm-up request), the worker's kept result page
    # costs one GET of the catalog's edition; a new query is 2
    # (tests/catalog/test_catalog_kept_pages.py)
    "catalog browse": 1,
    "catalog, 2 tags": 1,
    "catalog, 2 tags, signed in": 1,  # the edition GET read ahead with the identity
    "catalog, AND/OR/NOT": 1,
    "book detail": 1,
    "catalog staff list": 3,
    # Dashboard (staff)
    # overview, read afresh (the test settings hold it for 0 ms; held, it costs the identity
    # only: tests/dashboard/test_dashboard_pages.py): identity (1), the rooms' stats counters
    # (1), today's
    # bookings (the date index; their records when there are some), the visits (1)
    "dashboard overview": 4,
    "dashboard overview (30 bookings)": 4,
    "dashboard occupancy": 2,
    "dashboard bookings": 4,
    "dashboard bookings (30 bookings)": 4,
    "dashboard booking detail": 4,
    "dashboard people": 3,
    "dashboard person detail": 4,
    "dashboard person detail (30 bookings)": 4,
    "dashboard catalog": 1,
    "dashboard keyspace": 4,  # SCAN pages: grows with the number of keys (staff only)
    "dashboard audit": 5,  # ... and the references of the entries' bookings (one pipeline)
    "dashboard bookings CSV": 4,
    "dashboard bookings iCalendar": 4,
    # identity, every outbox in one pipeline, their attempts, and (only when a message is about a
    # booking) the bookings' references in one pipeline: staff read "booking B-7K3Q-9MXD", not
    # the outbox's internal entry; (only when one is about a person alone) their names
    "dashboard mail queue": 5,
    # identity, one HGET of the room's references, the booking (moved to another room: its
    # address now)
    "dashboard find by reference": 3,
}


# On a cluster a pipeline costs one round trip per primary it reaches: that is how they are
# counted (one send per node). Each value below is the page's pipelines, each counted for the
# primaries it reaches on the test cluster (fixed ids, so fixed slots); the identity (the
# session and its person) is counted as 1 here, and `budget_for` adds one when this request's
# session and person sit on two primaries. EVERY: a pipeline over every room (or every visits
# shard) reaches every primary.
EVERY = CLUSTER_PRIMARIES
# A person's list reads their index with the one set of marked rooms (booking-unindexed-rooms,
# issue 29; it was every room's unindexed set, 300 ZRANGEs reaching every primary): the
# index's primary and the marks' (two on the test cluster for owner 1).
INDEX_WITH_MARKS = 2
CLUSTER_BUDGETS: dict[str, int] = {
    # The site and accounts
    "home, anonymous": 0,
    "home, signed in": 1,
    "login page": 0,
    "sign-up page": 0,
    # identity; the person's fields, the index (read with the marked rooms) and the waits
    # index together; the records of rooms 10, 11, 12 (one per primary)
    "own account page": 1 + INDEX_WITH_MARKS + 3,
    "healthz": EVERY,  # CLUSTER INFO on every primary
    "forgot-password page": 0,
    "forgot-password POST": 3,  # {people}, the person, {mail}: one call each, as on one server
    "password reset link": 2,
    "account email POST": 5,  # every call on one tag, as on one server
    # the person's secret, the index with the marked rooms, the 3 records
    "calendar subscription": 1 + INDEX_WITH_MARKS + 3,
    # Booking: pages on one room (its tag). The room's read rides in the identity's pipeline
    # (strongroom/ahead.py), which on a cluster also reaches the room's primary: 1 + 1.
    "booking page, empty": 1,
    "booking page, class C picked": 2,
    "booking page, anonymous": 1,
    "calendar fragment": 2,
    "panel fragment": 2,
    # identity, the index with the marked rooms, the records (3 rooms, or 30 rooms: every
    # primary), the waits
    "my bookings (3)": 1 + INDEX_WITH_MARKS + 3 + 1,
    "my bookings (30)": 1 + INDEX_WITH_MARKS + EVERY + 1,
    "booking done page": 2,
    "pickup page": 0,
    # identity; the room (one primary), to say when it is free now; the room's month
    "waiting-list page": 3,
    "waiting-list page, no day": 2,  # identity; the room's month (one primary)
    # identity; the buyer's own bookings from that day (their index with the marked rooms); the
    # buyer's place, the wait function, the rooms with waits: one tag each
    "waiting-list POST": 1 + INDEX_WITH_MARKS + 3,
    "waiting-list POST, three days": 1 + INDEX_WITH_MARKS + 3 * 3,
    # identity, the index with the marked rooms, the waits, their notices (rooms 10 and 11:
    # two primaries)
    "my bookings with waits": 1 + INDEX_WITH_MARKS + 1 + 2,
    "booking .ics": 2,
    # the code with the address's lock (room 10 and {pickup:...}: two primaries), then the
    # pickup function with the miss counter (the same two)
    "pickup POST, wrong code": 2 + 2,
    # identity; the buyer's pace ({owner:1}); the hold function with the buyer's pointer (room
    # 9, {owner:1}: two primaries); the pointer swapped with the release of the previous hold
    # (the same two); the session
    "hold POST": 1 + 1 + 2 + 2 + 1,
    "confirm page": 2,
    # identity; the buyer's pace ({owner:1}); the claim (FCALL + WAITAOF); the index pipeline
    # (the owner's index and the date shard of room 101: two primaries); the ZREM from the
    # room's unindexed set after them
    "booking POST": 1 + 1 + 1 + 2 + 1,
    # measured on a store of its own that is one server, in both runs
    "booking POST, one server": 2,
    "booking POST, slot taken, one server": 3,
    # identity, the pace, the refused claim, the pace given back, the chosen room (its primary;
    # the nearby rooms, on every primary, only when the alternatives' link is followed)
    "booking POST, slot taken": 1 + 1 + 1 + 1 + 1,
    # identity, the chosen room, the buyer's own bookings (their index with the marked rooms),
    # the nearby rooms (every primary)
    "booking page, choice taken (alternatives)": 1 + 1 + INDEX_WITH_MARKS + EVERY,
    "panel fragment, polled, nothing new (204)": 2,
    # The building map: every room's bytes and holds in one pipeline (every primary)
    "building map, class C, signed in": 1 + EVERY,
    "building map, class C, anonymous": EVERY,
    "building map, class C with a room's grid": 1 + EVERY,
    "building map, class A, 7 days": 1 + EVERY,
    "building map results fragment (polled)": 1 + EVERY,
    # Catalog: every catalog key shares {cat}
    "catalog browse": BUDGETS["catalog browse"],
    "catalog, 2 tags": BUDGETS["catalog, 2 tags"],
    # the identity's pipeline also reaches the primary of {cat}
    "catalog, 2 tags, signed in": 1 + 1,
    "catalog, AND/OR/NOT": BUDGETS["catalog, AND/OR/NOT"],
    "book detail": BUDGETS["book detail"],
    "catalog staff list": 3,
    # Dashboard (staff)
    # identity, every room's stats counters, the date shards with the marked rooms, the visits
    # chart's shards (on every primary); no booking today
    "dashboard overview": 1 + EVERY + EVERY + EVERY,
    "dashboard overview (30 bookings)": 1 + EVERY + EVERY + EVERY,
    "dashboard occupancy": 1 + EVERY,  # every room's bitmap
    # identity, the date shards (on every primary) with the marked rooms, the records (3 rooms
    # or every primary), the names ({people})
    "dashboard bookings": 1 + EVERY + 3 + 1,
    "dashboard bookings (30 bookings)": 1 + EVERY + EVERY + 1,
    "dashboard booking detail": 4,  # one room's tag, then {people}
    "dashboard people": 3,
    # identity, the person, the index with the marked rooms, the records
    "dashboard person detail": 1 + 1 + INDEX_WITH_MARKS + 3,
    "dashboard person detail (30 bookings)": 1 + 1 + INDEX_WITH_MARKS + EVERY,
    "dashboard catalog": 1,
    # identity, SCAN on every primary, the keys' sizes (every primary), every room's inventories
    "dashboard keyspace": 1 + EVERY + EVERY + EVERY,
    # identity, every room's audit stream, the staff's stream, the names, the references of
    # the entries' bookings (their rooms: every primary at most)
    "dashboard audit": 1 + EVERY + 1 + 1 + EVERY,
    # identity, as the bookings page
    "dashboard bookings CSV": 1 + EVERY + 3 + 1,
    "dashboard bookings iCalendar": 1 + EVERY + 3 + 1,
    # identity, {mail}'s outbox with every room's outbox, the tries, the references (the rooms
    # of the messages' bookings: every primary at most), the people's names (one hash)
    "dashboard mail queue": 1 + EVERY + 1 + EVERY + 1,
    "dashboard find by reference": 3,
}


def test_every_page_has_a_budget_on_one_server_and_on_a_cluster() -> None:
    assert BUDGETS.keys() == CLUSTER_BUDGETS.keys()
    # A pipeline reaches at least one primary: a cluster never costs less than one server.
    assert all(CLUSTER_BUDGETS[name] >= BUDGETS[name] for name in BUDGETS)


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


@dataclass(frozen=True)
class Measured:
    """One request's round trips, and how many more than one its identity took (a cluster's
    session and person on two primaries; 0 on one server or without a signed-in session)."""

    trips: int
    identity_spread: int = 0


def count(make: Callable[[], Any], *, expect: int = 200) -> Measured:
    """Round trips of one request (after one warm-up request of the same kind)."""
    make()
    with round_trips() as trips:
        response = make()
    assert response.status_code == expect, (response.status_code, response.content[:300])
    session_key = response.wsgi_request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    identity = session_trips(store.get_store(), session_key)
    return Measured(trips.count, max(identity - 1, 0))


def csrf_of(client: Client, path: str) -> str:
    page = client.get(path).content.decode()
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert match
    return match.group(1)


def budget_for(name: str, *, identity_spread: int = 0) -> int:
    """The page's budget: BUDGETS on one server; on a cluster CLUSTER_BUDGETS, plus the
    identity's spread (its session and person read on two primaries: one round trip more)."""
    if not ON_CLUSTER:
        return BUDGETS[name]
    return CLUSTER_BUDGETS[name] + identity_spread


def check(name: str, measured: Measured) -> None:
    trips = measured.trips
    if os.environ.get("STRONGROOM_MEASURE_BUDGETS"):
        print(f"BUDGET {name!r}: {trips - measured.identity_spread} (+{measured.identity_spread})")
        return
    assert name in BUDGETS and name in CLUSTER_BUDGETS, f"no budget for {name}: took {trips}"
    budget = budget_for(name, identity_spread=measured.identity_spread)
    assert trips <= budget, f"{name}: {trips} round trips, budget {budget}"


def test_site_pages_stay_within_their_round_trip_budgets(site: Site, r: redis.Redis) -> None:
    check("home, anonymous", count(lambda: site.anonymous.get("/")))
    check("home, signed in", count(lambda: site.buyer.get("/")))
    check("login page", count(lambda: site.anonymous.get("/accounts/login/")))
    check("sign-up page", count(lambda: site.anonymous.get("/accounts/signup/")))
    check("own account page", count(lambda: site.buyer.get("/accounts/me/")))
    check("healthz", count(lambda: site.anonymous.get("/healthz")))
    check("forgot-password page", count(lambda: site.anonymous.get("/accounts/password/forgot/")))
    check(
        "forgot-password POST",
        count(
            lambda: site.anonymous.post(
                "/accounts/password/forgot/", {"login": site.buyer_person.username}
            )
        ),
    )
    token = reset_token_make(client=r, person_id=site.buyer_person.id)
    link = f"/accounts/password/reset/{site.buyer_person.id}/{token}/"
    check("password reset link", count(lambda: site.anonymous.get(link)))
    check(
        "account email POST",
        count(
            lambda: site.buyer.post(
                "/accounts/me/email/",
                {
                    "email": "b@example.test",
                    "language": "en",
                    "current_password": site.buyer_person.password,
                },
            ),
            expect=302,
        ),
    )
    secret = calendar_token_new(client=r, person_id=site.buyer_person.id)
    feed = f"/book/calendar/{site.buyer_person.id}-{secret}.ics"
    check("calendar subscription", count(lambda: site.anonymous.get(feed)))


def test_booking_pages_stay_within_their_round_trip_budgets(
    site: Site, r: redis.Redis, client_for: Callable[[Someone], Client]
) -> None:
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
    ics = f"/book/mine/{site.booking_id}/calendar.ics"
    check("booking .ics", count(lambda: site.buyer.get(ics)))
    wait_page = "/book/wait/?cls=A&room=10&date=2026-12-05"
    check("waiting-list page", count(lambda: site.buyer.get(wait_page)))
    no_day = "/book/wait/?cls=A&room=10&month=2026-12"
    check("waiting-list page, no day", count(lambda: site.buyer.get(no_day)))
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
    waiter = client_for(person_make(r, "budget_waiter"))
    days = iter(range(5, 8))

    def wait() -> Any:
        # rooms 10..12 are booked on Dec 5..7 by the budget buyer
        n = next(days)
        form = {"cls": "A", "room": str(5 + n), "date": f"2026-12-{n:02d}"}
        return waiter.post("/book/wait/", form)

    check("waiting-list POST", count(wait, expect=302))
    form = {"cls": "A", "room": "13", "date": ["2026-12-05", "2026-12-06", "2026-12-07"]}
    check(
        "waiting-list POST, three days", count(lambda: waiter.post("/book/wait/", form), expect=302)
    )
    check("my bookings with waits", count(lambda: waiter.get("/book/mine/")))


def test_a_booking_post_on_one_server_waits_for_the_store_once(one_server: redis.Redis) -> None:
    from accounts.selectors import person_with_password
    from accounts.sessions import SessionStore, session_sign_in

    someone = person_make(one_server, "one_server_buyer")
    found = person_with_password(client=one_server, person_id=someone.person.id)
    assert found is not None
    session = SessionStore()
    session_sign_in(session, person=found[0], password_hash=found[1])
    session.save()
    buyer = Client()
    buyer.cookies[settings.SESSION_COOKIE_NAME] = str(session.session_key)
    rooms = iter(range(100, 200))

    def claim() -> Any:
        room = next(rooms)
        form = {"cls": "C", "room": str(room), "start": "9", "end": "10", "box": "5"}
        form |= {"date": "2026-12-09", "booking_id": booking_new_id(room=room)}
        return buyer.post("/book/claim/", form)

    check("booking POST, one server", count(claim, expect=302))
    taken = {"cls": "C", "room": "100", "start": "9", "end": "10", "box": "5"}
    taken |= {"date": "2026-12-09"}

    def refused() -> Any:
        return buyer.post("/book/claim/", {**taken, "booking_id": booking_new_id(room=100)})

    check("booking POST, slot taken, one server", count(refused, expect=409))
    req = slot_request_parse(cls="A", room=7, dates=[dt.date(2026, 12, 5)])
    with round_trips() as trips:
        made = booking_claim(
            client=one_server, owner_id="5", request=req, booking_id=booking_new_id(room=7)
        )
    assert made.ok and trips.count == 1  # FCALL + WAITAOF, indexes inside: one round trip


def test_catalog_pages_stay_within_their_round_trip_budgets(site: Site) -> None:
    check("catalog browse", count(lambda: site.anonymous.get("/catalog/")))
    check("catalog, 2 tags", count(lambda: site.anonymous.get("/catalog/?all=web&all=ruby")))
    check(
        "catalog, 2 tags, signed in",
        count(lambda: site.buyer.get("/catalog/?all=web&all=ruby")),
    )
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
        "dashboard mail queue": "/staff/mail/",
        "dashboard bookings CSV": "/staff/bookings/export.csv",
        "dashboard bookings iCalendar": "/staff/bookings/export.ics",
    }
    # The mail page names the person of an account mail, besides the bookings of receipts.
    mail_queue(r, kind="password_changed", args=(site.buyer_person.id,))
    for name, path in pages.items():
        check(name, count(functools.partial(site.staff.get, path)))
    found = booking_get(client=r, booking_id=site.booking_id)
    assert found is not None
    find = f"/staff/bookings/find/?ref={found.reference}"
    check("dashboard find by reference", count(lambda: site.staff.get(find), expect=302))
    _bookings_for(r, site.buyer_person, 27, first_room=200)
    for name in ("dashboard overview", "dashboard bookings", "dashboard person detail"):
        check(f"{name} (30 bookings)", count(functools.partial(site.staff.get, pages[name])))


# Commands a list page sends (INFO commandstats summed over every primary, the identity's
# included): its index, the one set of marked rooms, the records, names and waits. Before issue
# 29 a cluster's list read also sent one ZRANGE of every room's unindexed set: 300 a page.
LIST_COMMAND_BUDGETS: dict[str, int] = {
    # + the buyer's waits (a ZRANGE of their own index), + their priority holds (read with the
    # identity: the banner of every page)
    "my bookings (3)": 12,
    # 16 date shards; every signed-in page's identity also reads the priority holds (+1)
    "dashboard bookings": 24,
    "dashboard bookings CSV": 24,
    # + the person's hold pointer and waits index (a GET and a ZRANGE, sent with the index)
    "dashboard person detail": 11,
}


def test_list_pages_send_no_command_per_room(site: Site, r: redis.Redis) -> None:
    pages = {
        "my bookings (3)": (site.buyer, "/book/mine/"),
        "dashboard bookings": (site.staff, "/staff/bookings/"),
        "dashboard bookings CSV": (site.staff, "/staff/bookings/export.csv"),
        "dashboard person detail": (site.staff, f"/staff/people/{site.buyer_person.id}/"),
    }
    for name, (client, path) in pages.items():
        client.get(path)  # warm-up
        before = commands_run(r)
        response = client.get(path)
        ran = commands_run(r) - before
        ran["info"] -= len(store.primaries(r))  # the count's own INFO on each primary
        assert response.status_code == 200, (name, response.status_code)
        sent = sum(ran.values())
        if os.environ.get("STRONGROOM_MEASURE_BUDGETS"):
            print(f"COMMANDS {name!r}: {sent} {dict(ran)}")
            continue
        assert sent <= LIST_COMMAND_BUDGETS[name], (name, sent, dict(ran))


def test_get_pages_write_nothing_but_the_batched_visit_counters(site: Site, r: redis.Redis) -> None:
    """A page view is counted in memory; the store sees a write only when the batch is flushed."""
    from accounts.visits import visits_flush, visits_pending

    picked = "?cls=C&room=42&box=7&start=10&end=12&date=2026-12-16&month=2026-12"
    htmx = {"HX-Request": "true"}
    pages = [
        (site.anonymous, "/", {}),
        (site.buyer, "/", {}),
        (site.buyer, "/book/" + picked, {}),
        (site.buyer, "/book/parts/calendar/?cls=C&room=42&month=2026-12", htmx),
        (site.buyer, "/book/mine/", {}),
        (site.buyer, f"/book/done/{site.booking_id}/", {}),
        (site.buyer, "/accounts/me/", {}),
        (site.anonymous, f"/catalog/book/{site.book_id}/", {}),
        (site.anonymous, "/catalog/?all=web&any=ruby,python&not=java", {}),
        (site.buyer, "/book/find/?cls=C&date=2026-12-16&start=10&end=12", {}),
        (site.staff, "/staff/", {}),
        (site.staff, "/staff/bookings/", {}),
    ]
    for client, path, headers in pages:
        client.get(path, headers=headers)  # sessions and CSRF cookies settle on a first visit
    visits_flush()
    # PFCOUNT keeps the visitors' count cached in its HyperLogLog (a write) when it changed
    # since the last read: the overview reads it once after the flush, then never again.
    site.staff.get("/staff/")
    before, pending = keys_changed(r), visits_pending()
    for client, path, headers in pages:
        assert client.get(path, headers=headers).status_code == 200, path
        assert keys_changed(r) == before, f"GET {path} wrote to the store"
    assert visits_pending() == pending + len(pages) - 1  # every page but the htmx fragment
    visits_flush()
    assert keys_changed(r) > before


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
    """The honest summary's alternatives cost one read, the buyer's own bookings one more; a
    refresh that finds nothing new is the panel's read and no visit record."""
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
