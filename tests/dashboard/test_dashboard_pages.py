"""The staff dashboard: access rules, the overview's figures, filters, details, people, audit."""

from __future__ import annotations

import datetime as dt
import html
import re
from collections.abc import Callable

import pytest
import redis
import time_machine
from django.test import Client

from accounts.selectors import person_get
from accounts.services import login_record
from accounts.visits import visits_flush
from booking.domain.keys import date_indexes, person_index
from booking.domain.records import Booking
from booking.domain.rules import SLOTS_PER_DAY
from booking.engine.bookings import booking_get
from booking.engine.pickup import booking_pickup
from dashboard.selectors import overview_recent, overview_recent_forget
from strongroom.audit import staff_audit_record
from strongroom.decoders import text_stream
from strongroom.keyspace import BOOKING_UNINDEXED_ROOMS, SESSION, STAFF_AUDIT, family_of
from strongroom.store import primaries, primaries_reached, round_trips
from tests.booking_support import claim, request
from tests.conftest import ON_CLUSTER, Someone
from tests.dashboard_support import (
    DEC3,
    World,
    booking_links,
    chart_numbers,
    figure,
)
from tests.store_support import identity_trips, rooms_trips

# A year past any the staff pages take, whenever the tests run (a few years either side).
FAR = dt.date.today().year + 20
GET_PAGES = [
    "/staff/",
    "/staff/occupancy/",
    "/staff/occupancy/?cls=C&floor=1&hour_start=8&hour_end=12",
    "/staff/bookings/",
    "/staff/bookings/export.csv",
    "/staff/bookings/export.ics",
    "/staff/bookings/{booking}/",
    "/staff/people/",
    "/staff/people/{person}/",
    "/staff/catalog/",
    "/staff/keyspace/",
    "/staff/audit/",
]
POST_PAGES = [
    "/staff/bookings/{booking}/cancel/",
    "/staff/people/{person}/staff/",
    "/staff/keyspace/flush/",
]


@pytest.fixture
def one_booking(r: redis.Redis, buyer: Someone) -> str:
    result = claim(r, request("B", 7, (3,), hour_start=8, hour_end=12), owner=str(buyer.id))
    assert result.booking is not None
    return result.booking.id


def _url(template: str, booking: str, person: Someone) -> str:
    return template.format(booking=booking, person=person.id)


@pytest.mark.parametrize("page", GET_PAGES)
def test_anonymous_visitors_are_sent_to_the_login_page(
    page: str, one_booking: str, buyer: Someone
) -> None:
    url = _url(page, one_booking, buyer)
    response = Client().get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


@pytest.mark.parametrize("page", GET_PAGES)
def test_buyers_get_403_and_staff_get_the_page(
    page: str,
    one_booking: str,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    url = _url(page, one_booking, buyer)
    assert client_for(buyer).get(url).status_code == 403
    assert client_for(staff).get(url).status_code == 200


@pytest.mark.parametrize("page", POST_PAGES)
def test_posts_are_staff_only_and_change_nothing_otherwise(
    page: str,
    one_booking: str,
    buyer: Someone,
    client_for: Callable[[Someone], Client],
    r: redis.Redis,
) -> None:
    url = _url(page, one_booking, buyer)
    data = {"reason": "x", "is_staff": "1", "confirmation": "2026-12"}
    anonymous = Client().post(url, data)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert client_for(buyer).post(url, data).status_code == 403
    booking = booking_get(client=r, booking_id=one_booking)
    assert booking is not None and booking.status == "confirmed"
    person = person_get(client=r, person_id=buyer.id)
    assert person is not None and not person.is_staff


def test_the_overview_figures_equal_counts_from_the_booking_records(
    r: redis.Redis,
    world: World,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    records = world.fresh(r)
    today = DEC3.date()
    with time_machine.travel(DEC3, tick=False):
        html = client_for(staff).get("/staff/").content.decode()
    for cls in "ABC":
        mine = [b for b in records if b.cls == cls]
        active = [b for b in mine if b.status != "cancelled"]
        booked = 0
        for b in active:
            hours = (b.hours[1] - b.hours[0]) if b.hours else 1
            booked += len(b.dates) * hours * max(1, len(b.boxes))
        capacity = SLOTS_PER_DAY[cls] * 300 * 31
        assert figure(html, cls, "for_today") == str(sum(today in b.dates for b in active))
        made_today = sum(b.created_at.astimezone(DEC3.tzinfo).date() == today for b in active)
        assert figure(html, cls, "made_today") == str(made_today)
        assert figure(html, cls, "season") == str(len(active))
        assert figure(html, cls, "cancelled") == str(len(mine) - len(active))
        assert figure(html, cls, "booked") == str(booked)
        assert figure(html, cls, "capacity") == str(capacity)
    # The figures are not all zero: the world has something in every column.
    assert figure(html, "A", "cancelled") == "1" and figure(html, "B", "made_today") == "1"
    assert figure(html, "C", "booked") == str(2 * 3 + 24)
    # The columns count over different days, and the page says which (a probe read "This
    # season 3" beside "Booked slots 4" as a contradiction).
    assert "occupancy count the season’s days, 2026-12-01 to 2026-12-31." in html
    per_day = chart_numbers(html, "chart-bookings")
    for n in range(1, 32):
        date = dt.date(2026, 12, n)
        expected = sum(date in b.dates for b in records if b.status != "cancelled")
        assert per_day[date.strftime("%m-%d")] == expected
    # Today's pickups: A room 5 (all day), B room 7 from 08:00, C room 7 from 09:00.
    section = html[html.index('id="pickups"') :]
    due = {b.id for b in records if b.status == "confirmed" and today in b.dates}
    assert booking_links(section) == due and len(due) == 3


def test_the_overview_charts_page_views_and_unique_visitors(
    staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    with time_machine.travel(DEC3, tick=False):
        client = client_for(staff)
        for _ in range(3):
            client.get("/catalog/")
        Client().get("/")
        visits_flush()  # the worker's batch, written (a served site does it every second)
        html = client.get("/staff/").content.decode()
    views = chart_numbers(html, "chart-views")
    visitors = chart_numbers(html, "chart-visitors")
    assert views["12-03"] >= 4 and visitors["12-03"] == 2
    assert views["12-01"] == 0 and visitors["12-01"] == 0


def test_the_overview_takes_a_constant_number_of_round_trips(
    r: redis.Redis,
    world: World,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    client = client_for(staff)
    with time_machine.travel(DEC3, tick=False), round_trips() as small:
        assert client.get("/staff/").status_code == 200
    for room in range(20, 60):
        claim(r, request("B", room, (3, 8), hour_start=1, hour_end=23), owner=str(buyer.id))
    with time_machine.travel(DEC3, tick=False), round_trips() as busy:
        assert client.get("/staff/").status_code == 200
    # The session and its person (1), the rooms' stats counters (1), today's bookings (date
    # index, records: 2), the visits chart (1), the pickups' names (1): the same for 6 bookings
    # as for 46 (6 in all).
    if ON_CLUSTER:
        # One round trip per primary a pipeline reaches: the identity (1 or 2); each of the 4
        # pipelines over rooms, shards or records (the counters of every room, the date shards
        # with the set of marked rooms, today's records, the visits chart's shards) at most
        # once per primary; the names ({people}) 1.
        most = identity_trips(r, client) + 4 * len(primaries(r)) + 1
        assert small.count == busy.count <= most, (small.count, busy.count, most)
    else:
        assert busy.count == small.count
        assert busy.count <= 6, busy.count


def test_the_overview_is_read_once_per_interval_and_says_how_old_it_is(
    r: redis.Redis,
    world: World,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
    settings,
) -> None:
    settings.STRONGROOM_OVERVIEW_CACHE_MS = 60_000
    overview_recent_forget()
    client = client_for(staff)
    try:
        with time_machine.travel(DEC3, tick=False):
            first = client.get("/staff/").content.decode()
            claim(r, request("A", 250, (3, 3)), owner=str(buyer.id))
            with round_trips() as trips:
                held = client.get("/staff/").content.decode()
            # the session and its person: the figures come from memory
            assert trips.count == identity_trips(r, client)
            assert figure(held, "A", "for_today") == figure(first, "A", "for_today")
            assert 'id="figures-age"' in held and "s ago" in held
            overview_recent_forget()  # as if the interval had passed
            fresh = client.get("/staff/").content.decode()
        assert int(figure(fresh, "A", "for_today")) == int(figure(first, "A", "for_today")) + 1
    finally:
        overview_recent_forget()


def test_bookings_filter_by_range_class_room_status_and_person(
    r: redis.Redis,
    world: World,
    second_buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    records = world.fresh(r)
    client = client_for(staff)

    def ids(query: str) -> set[str]:
        response = client.get("/staff/bookings/?" + query)
        assert response.status_code == 200
        return booking_links(response.content.decode())

    def where(test: Callable[[Booking], bool]) -> set[str]:
        return {b.id for b in records if test(b)}

    d3, d4 = dt.date(2026, 12, 3), dt.date(2026, 12, 4)
    assert ids("start=2026-12-03&end=2026-12-03") == where(lambda b: d3 in b.dates)
    assert ids("start=2026-12-04&end=2026-12-31") == where(lambda b: any(d >= d4 for d in b.dates))
    assert ids("cls=C") == where(lambda b: b.cls == "C")
    assert ids("room=7") == where(lambda b: b.room == 7)
    assert ids("status=cancelled") == {world.cancelled_id}
    assert ids(f"person={second_buyer.username.upper()}") == where(
        lambda b: b.owner_id == str(second_buyer.id)
    )
    assert ids("cls=B&room=7&hour=9") == where(lambda b: b.cls == "B" and b.room == 7)
    assert ids("cls=B&room=7&hour=12") == set()


def test_bookings_are_paged(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client],
    settings: object,
) -> None:  # fmt: skip
    settings.STRONGROOM_DASHBOARD_PAGE_SIZE = 5  # type: ignore[attr-defined]
    made = {
        claim(r, request("A", room, (9,)), owner=str(buyer.id)).booking.id  # type: ignore[union-attr]
        for room in range(1, 13)
    }
    client = client_for(staff)
    seen: set[str] = set()
    for page in (1, 2, 3):
        html = client.get(f"/staff/bookings/?cls=A&page={page}").content.decode()
        shown = booking_links(html)
        assert len(shown) == (5 if page < 3 else 2)
        seen |= shown
        assert f"Page {page} of 3" in html
    assert seen == made
    late = client.get("/staff/bookings/?cls=A&page=9")
    assert late.status_code == 200 and "There is no page 9; showing page 3" in late.content.decode()
    for odd in ("0", "abc", "1%0A", "9" * 30):  # said, and the first page shown
        answer = client.get(f"/staff/bookings/?cls=A&page={odd}").content.decode()
        assert "; showing page 1." in answer and "Page 1 of 3" in answer
        assert "page:" not in answer


def test_a_filter_nothing_matches_says_so(
    one_booking: str, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    for query in ("room=2", "cls=A&box=5"):
        page = client_for(staff).get("/staff/bookings/?" + query).content.decode()
        assert "No booking matches this filter." in page and "0 bookings" in page


def test_staff_see_todays_and_past_bookings_and_those_a_narrowed_window_no_longer_sells(
    r: redis.Redis, one_booking: str, staff: Someone, client_for: Callable[[Someone], Client],
    settings: object,
) -> None:  # fmt: skip
    """The list is not the sales window: on the pickup day (a rolling window starts tomorrow)
    today's booking is listed and mapped, a day gone by can be asked for, and a window moved
    away from a booked day hides nothing."""
    settings.STRONGROOM_SEASON_START = settings.STRONGROOM_SEASON_END = None  # type: ignore[attr-defined]
    client = client_for(staff)
    with time_machine.travel(dt.datetime(2026, 12, 3, 9, tzinfo=DEC3.tzinfo), tick=False):
        assert one_booking in client.get("/staff/bookings/").content.decode()
        occupancy = client.get("/staff/occupancy/?cls=B").content.decode()
        assert "2026-12-03" in occupancy
    with time_machine.travel(dt.datetime(2026, 12, 9, 9, tzinfo=DEC3.tzinfo), tick=False):
        assert one_booking not in client.get("/staff/bookings/").content.decode()
        past = client.get("/staff/bookings/?start=2026-12-01&end=2026-12-05").content.decode()
        assert one_booking in past and 'class="errorlist"' not in past
        assert (
            one_booking
            in client.get("/staff/bookings/export.csv?start=2026-12-03").content.decode()
        )
    settings.STRONGROOM_SEASON_START = dt.date(2026, 11, 1)  # type: ignore[attr-defined]
    settings.STRONGROOM_SEASON_END = dt.date(2026, 11, 10)  # type: ignore[attr-defined]
    with time_machine.travel(dt.datetime(2026, 11, 28, 9, tzinfo=DEC3.tzinfo), tick=False):
        assert one_booking in client.get("/staff/bookings/").content.decode()
        day = client.get("/staff/bookings/?start=2026-12-03&end=2026-12-03").content.decode()
        assert one_booking in day and 'class="errorlist"' not in day


@pytest.mark.parametrize(
    "query",
    [
        f"start={FAR}-01-05",
        "end=2020-01-05",  # before the list's start, with no From
        "start=2026-12-10&end=2026-12-01",
        "start=2026-13-45",
        "room=999",
        "room=-1",
        "room=%7Bx%7D",
        "cls=Z",
        "status=lost",
        "hour=25",
        "box=101",
        "box=0",
        "person=" + "x" * 200,
        "person=%7Broom%3A007%7D%3A*%0Aevil",
        "person=%F0%9F%92%8E",
    ],
)
def test_bad_filters_give_a_message_not_a_500(
    query: str, staff: Someone, client_for: Callable[[Someone], Client], one_booking: str
) -> None:
    for url in ("/staff/bookings/?", "/staff/bookings/export.csv?", "/staff/bookings/export.ics?"):
        response = client_for(staff).get(url + query)
        assert response.status_code in (200, 400)
        if response["Content-Type"].startswith("text/html"):
            html = response.content.decode()
            assert 'class="errorlist"' in html or "Nobody is called" in html
            assert one_booking not in html


@pytest.mark.parametrize(
    "url",
    [
        "/staff/bookings/nope/",
        "/staff/bookings/007-aaaaaaaaaaaaaaaaaaaaaaaaaa/",
        "/staff/bookings/%7Broom%3A007%7D/",
        "/staff/people/424242/",
        "/staff/bookings/999-aaaaaaaaaaaaaaaaaaaaaaaaaa/",
        "/staff/bookings/000-aaaaaaaaaaaaaaaaaaaaaaaaaa/",
        "/staff/bookings/007-AAAAAAAAAAAAAAAAAAAAAAAAAA/",
    ],
)
def test_unknown_ids_get_a_clear_404(
    url: str, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    response = client_for(staff).get(url)
    assert response.status_code == 404
    assert "There is no" in response.content.decode()


@pytest.mark.parametrize(
    "query",
    [f"date={FAR}-02-01", "date=yesterday", "cls=D", "floor=0", "floor=99",
     "cls=C&hour_start=12&hour_end=8", "cls=C&hour_start=-3", "floor=%00"],
)  # fmt: skip
def test_bad_map_choices_give_a_message_not_a_500(
    query: str, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    response = client_for(staff).get("/staff/occupancy/?" + query)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="errorlist"' in html or "no such floor" in html


def test_the_map_form_shows_the_choice_the_map_shows(
    staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    html = client_for(staff).get("/staff/occupancy/").content.decode()
    shown = re.search(r"Class B on (\d{4}-\d{2}-\d{2})", html)
    assert shown, "the page names the map it shows"
    assert re.search(r'<option value="B" selected>', html)
    assert f'value="{shown.group(1)}"' in html


def test_the_map_shows_booked_cells_and_links_to_their_bookings(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    b = claim(r, request("B", 7, (3,), hour_start=8, hour_end=12), owner=str(buyer.id))
    c = claim(r, request("C", 30, (3,), hour_start=9, hour_end=10, boxes="4"), owner=str(buyer.id))
    assert b.ok and c.ok
    client = client_for(staff)
    html = client.get("/staff/occupancy/?date=2026-12-03&cls=B&floor=1").content.decode()
    rows = re.search(
        r'<table class="heatmap heatmap--detail" id="heat-rooms">(.*?)</table>', html, re.S
    )
    assert rows
    room7 = re.search(r'<th scope="row">007</th>(.*?)</tr>', rows.group(1), re.S)
    assert room7
    levels = re.findall(r'class="heat heat-(\d)"', room7.group(1))
    assert levels == ["0"] * 8 + ["4"] * 4 + ["0"] * 12
    link = "/staff/bookings/?start=2026-12-03&amp;end=2026-12-03&amp;cls=B&amp;room=7&amp;hour=9"
    assert link in room7.group(1)
    assert b.booking is not None
    assert b.booking.id in booking_links(client.get(link.replace("&amp;", "&")).content.decode())
    c_html = client.get(
        "/staff/occupancy/?date=2026-12-03&cls=C&floor=2&hour_start=9&hour_end=11"
    ).content.decode()
    room30 = re.search(r'<th scope="row">030</th>(.*?)</tr>', c_html, re.S)
    assert room30
    cells = re.findall(r'class="heat heat-(\d)"', room30.group(1))
    assert len(cells) == 100 and cells[3] == "2" and cells.count("0") == 99
    box_link = "cls=C&amp;room=30&amp;box=4"
    assert box_link in room30.group(1)
    assert c.booking is not None
    box_query = "/staff/bookings/?start=2026-12-03&end=2026-12-03&cls=C&room=30"
    assert booking_links(client.get(box_query + "&box=4").content.decode()) == {c.booking.id}
    assert booking_links(client.get(box_query + "&box=5").content.decode()) == set()
    a_html = client.get("/staff/occupancy/?date=2026-12-03&cls=A").content.decode()
    assert a_html.count('<td class="heat heat-4">') == 0
    claim(r, request("A", 30, (3,)), owner=str(buyer.id))
    a_html = client.get("/staff/occupancy/?date=2026-12-03&cls=A").content.decode()
    assert a_html.count('<td class="heat heat-4">') == 1
    assert "cls=A&amp;room=30" in a_html


def test_staff_cancel_a_booking_with_a_reason_that_reaches_the_audit_log(
    r: redis.Redis,
    one_booking: str,
    staff: Someone,
    buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    client = client_for(staff)
    refused = client.post(f"/staff/bookings/{one_booking}/cancel/", {"reason": "   "})
    assert refused.status_code == 400
    assert "Give a reason: buyers and the audit log see it." in refused.content.decode()
    assert booking_get(client=r, booking_id=one_booking).status == "confirmed"  # type: ignore[union-attr]
    page = client.get(f"/staff/bookings/{one_booking}/").content.decode()
    # The reason reaches the buyer (mail, My bookings): the form must not say it stays inside.
    assert "The buyer sees the reason (in their mail and on My bookings)" in page
    assert "The reason goes into the audit log." not in page
    form = re.search(r'id="cancel-form">.*?name="request_id" value="([^"]+)"', page, re.S)
    assert form
    sent = {"reason": "Safe 7 is\nbeing repaired", "request_id": form.group(1)}
    done = client.post(f"/staff/bookings/{one_booking}/cancel/", sent)
    assert done.status_code == 302
    # A double click is the same request: cancelled, said twice, not "already cancelled".
    client.get(done["Location"])  # the first answer's message, shown and gone
    twice = client.post(f"/staff/bookings/{one_booking}/cancel/", sent, follow=True)
    assert "The booking is cancelled" in twice.content.decode()
    assert "already cancelled" not in twice.content.decode()
    booking = booking_get(client=r, booking_id=one_booking)
    assert booking is not None and booking.status == "cancelled"
    assert booking.cancel_reason == "Safe 7 is being repaired"
    assert booking.cancelled_by == str(staff.id)
    log = client.get("/staff/audit/?kind=cancel").content.decode()
    assert "Safe 7 is being repaired" in log and one_booking in log and staff.username in log
    detail = client.get(f"/staff/bookings/{one_booking}/").content.decode()
    assert "Safe 7 is being repaired" in detail and 'id="cancel-form"' not in detail
    # Every time shown says whose clock it is: the site's, which a browser may not share.
    zone = r'<span class="zone">\(Shanghai time\)</span>'
    assert re.search(r"Cancelled at</dt><dd>[-\d]+ [:\d]+ " + zone, detail)
    assert "Times on the staff pages are Shanghai time." in detail
    mine = client_for(buyer).get("/book/mine/").content.decode()
    assert re.search(r"Cancelled by our staff\..*?[:\d]+ " + zone, mine, re.S)
    person = client.get(f"/staff/people/{buyer.id}/").content.decode()
    assert re.search(r'id="last-login">(never|[-\d]+ [:\d]+ ' + zone + ")", person)
    again = client.post(f"/staff/bookings/{one_booking}/cancel/", {"reason": "twice"})
    assert again.status_code == 302
    assert "already cancelled" in client.get(again["Location"]).content.decode()


def test_posts_without_csrf_are_refused(
    r: redis.Redis, one_booking: str, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    client.handler.enforce_csrf_checks = True
    response = client.post(f"/staff/bookings/{one_booking}/cancel/", {"reason": "no token"})
    assert response.status_code == 403
    assert booking_get(client=r, booking_id=one_booking).status == "confirmed"  # type: ignore[union-attr]


def test_people_recent_logins_top_visitors_and_search(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    base = 1_795_000_000_000
    for i, someone in enumerate([buyer, second_buyer, buyer, buyer]):
        login_record(client=r, person_id=someone.id, at_ms=base + i * 60_000)
    claim(r, request("A", 9, (12,)), owner=str(buyer.id))
    client = client_for(staff)
    html = client.get("/staff/people/").content.decode()
    recent = re.search(r'id="recent-logins">(.*?)</table>', html, re.S).group(1)  # type: ignore[union-attr]
    names = re.findall(r">([^<>]+)</a></td>", recent)
    assert names == [buyer.username, buyer.username, second_buyer.username, buyer.username]
    top = re.search(r'id="top-logins">(.*?)</table>', html, re.S).group(1)  # type: ignore[union-attr]
    assert re.findall(r">([^<>]+)</a></td><td>(\d+)</td>", top) == [
        (buyer.username, "3"), (second_buyer.username, "1"),
    ]  # fmt: skip
    found = client.get("/staff/people/", {"q": "  buyer_anna "})
    assert found.status_code == 302 and found["Location"] == f"/staff/people/{buyer.id}/"
    page = client.get(found["Location"]).content.decode()
    assert '<dd id="login-count">3</dd>' in page
    assert len(booking_links(page)) == 1
    missing = client.get("/staff/people/", {"q": "{nobody}:*"}).content.decode()
    assert "Nobody is called" in missing


def test_granting_and_revoking_staff_is_audited_and_self_revoke_refused(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    assert client.post(f"/staff/people/{buyer.id}/staff/", {"is_staff": "1"}).status_code == 302
    assert person_get(client=r, person_id=buyer.id).is_staff  # type: ignore[union-attr]
    assert client.post(f"/staff/people/{buyer.id}/staff/", {"is_staff": "0"}).status_code == 302
    assert not person_get(client=r, person_id=buyer.id).is_staff  # type: ignore[union-attr]
    assert "Revoke staff" not in client.get(f"/staff/people/{staff.id}/").content.decode()
    own = client.post(f"/staff/people/{staff.id}/staff/", {"is_staff": "0"})
    assert own.status_code == 302
    assert "cannot revoke your own" in client.get(own["Location"]).content.decode()
    assert person_get(client=r, person_id=staff.id).is_staff  # type: ignore[union-attr]
    assert client.post("/staff/people/99999/staff/", {"is_staff": "1"}).status_code == 404
    kinds = [fields["kind"] for _id, fields in text_stream(r.xrange(STAFF_AUDIT.key()))]
    assert kinds == ["staff_grant", "staff_revoke"]
    log = client.get("/staff/audit/?kind=staff_grant").content.decode()
    assert 'data-kind="staff_grant"' in log and 'data-kind="staff_revoke"' not in log
    # The person granted is named (a link) under Detail, not as a number under Booking.
    assert f'<a href="/staff/people/{buyer.id}/">{buyer.username}</a></td>' in log
    assert f"<td>{buyer.id}</td>" not in log


def test_the_audit_log_is_newest_first_and_filtered_by_kind(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    first = claim(r, request("A", 1, (3,)), owner=str(buyer.id))
    claim(r, request("A", 2, (4,)), owner=str(buyer.id))
    assert first.booking is not None
    client = client_for(staff)
    client.post(f"/staff/bookings/{first.booking.id}/cancel/", {"reason": "r"})
    html = client.get("/staff/audit/").content.decode()
    kinds = re.findall(r'data-kind="(\w+)"', html)
    assert kinds[0] == "cancel" and sorted(kinds) == ["cancel", "claim", "claim"]
    only = re.findall(r'data-kind="(\w+)"', client.get("/staff/audit/?kind=claim").content.decode())
    assert only == ["claim", "claim"]
    bad = client.get("/staff/audit/?kind=%7Bevil%7D")
    assert bad.status_code == 200 and 'class="errorlist"' in bad.content.decode()


def test_a_deleted_account_in_the_login_lists_is_named_so_not_an_empty_link(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    from accounts.services import person_delete

    login_record(client=r, person_id=buyer.id, at_ms=1_795_000_000_000)
    assert person_delete(client=r, person_id=buyer.id)
    html = client_for(staff).get("/staff/people/").content.decode()
    assert f'href="/staff/people/{buyer.id}/"' not in html
    assert f"deleted account (#{buyer.id})" in html and "></a></td>" not in html


def test_staff_forms_show_their_help_and_name_their_choice_groups(
    staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    closures = client.get("/staff/closures/").content.decode()
    described = re.search(r'aria-describedby="([^"]*id_rooms_helptext[^"]*)"', closures)
    assert described and 'id="id_rooms_helptext"' in closures
    assert "a range (5-10)" in closures
    window = client.get("/staff/window/").content.decode()
    assert re.search(r'<fieldset class="field">\s*<legend>[^<]+</legend>', window)
    assert '<label for="">' not in window


def test_a_hold_in_the_audit_log_names_its_id_without_a_dead_link(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    from booking.domain.rules import hold_new_id
    from booking.engine.holds import booking_hold

    hold_id = hold_new_id(room=5)
    held = booking_hold(client=r, owner_id=str(buyer.id), request=request("A", 5, (3,)),
                        hold_id=hold_id)  # fmt: skip
    assert held.ok
    log = client_for(staff).get("/staff/audit/?kind=hold").content.decode()
    assert hold_id in log and f"/staff/bookings/{hold_id}/" not in log


def test_the_audit_log_speaks_chinese_where_the_site_wrote_the_detail(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    for n in range(4):  # the fourth wrong code in a room is the first one audited
        assert not booking_pickup(
            client=r, room="007", code=f"WRYNGZZZZ{n + 2}", client_id="10.0.0.9"
        ).ok
    client = client_for(staff)
    english = client.get("/staff/audit/?kind=pickup_failed").content.decode()
    chinese = client.get("/staff/audit/?kind=pickup_failed", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "<td>4 wrong codes from 10.0.0.9 within 10 min</td>" in english
    assert "<td>10 分钟内来自 10.0.0.9 的 4 次错误取件码</td>" in chinese.content.decode()


def test_the_keyspace_page_explains_each_family_in_chinese(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    page = client_for(staff).get("/staff/keyspace/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    text = page.content.decode()
    assert "每个用户一个哈希" in text and "a hash per person" not in text
    # Every family's words are translated: Django doubles a "%" in a text it translates from a
    # variable, so a text with one is never found in the catalog.
    from strongroom.keyspace.core import FAMILIES

    for family in FAMILIES.values():
        for words in (family.holds, family.why):
            assert "%" not in str(words), family.name
            assert not words or html.escape(str(words)) not in text, family.name


def test_the_catalog_section_links_to_the_catalog_staff_pages(
    staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    html = client_for(staff).get("/staff/catalog/").content.decode()
    assert 'href="/staff/catalog/books/"' in html and 'href="/staff/catalog/books/add/"' in html


def test_pages_speak_simplified_chinese(
    staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    client.cookies["django_language"] = "zh-hans"
    html = client.get("/staff/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "概览" in html and "占用" in html


def test_no_inline_styles_or_scripts_on_dashboard_pages(
    one_booking: str, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    for page in GET_PAGES[:3] + GET_PAGES[6:]:
        html = client.get(_url(page, one_booking, buyer)).content.decode()
        assert "style=" not in html and "<script>" not in html and "onclick" not in html


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/staff/bookings/{booking}/cancel/", {"reason": "x" * 501}),
        ("/staff/bookings/{booking}/cancel/", {"reason": "bad\x00byte"}),
        ("/staff/bookings/{booking}/cancel/", {}),
        ("/staff/people/{person}/staff/", {"is_staff": "2"}),
        ("/staff/people/{person}/staff/", {}),
        ("/staff/keyspace/flush/", {"confirmation": "2026-12", "reason": "r" * 501}),
        ("/staff/keyspace/flush/", {"confirmation": "\U0001f48e" * 70}),
    ],
)
def test_bad_posts_write_nothing_and_explain(
    path: str,
    data: dict[str, str],
    r: redis.Redis,
    one_booking: str,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    from tests.booking_support import snapshot

    before = snapshot(r)
    client = client_for(staff)
    response = client.post(_url(path, one_booking, buyer), data)
    assert response.status_code in (302, 400)
    shown = client.get(response["Location"]) if response.status_code == 302 else response
    html = shown.content.decode()
    assert 'class="errorlist"' in html or "message--error" in html
    after = snapshot(r)
    # The session of the signed-in staff member may be touched; nothing else is.
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert all(family_of(k) is SESSION or ":visits" in k or "{visits" in k for k in changed), (
        changed
    )


def test_a_booking_id_of_an_unknown_room_cannot_be_cancelled(
    staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    response = client_for(staff).post(
        "/staff/bookings/999-aaaaaaaaaaaaaaaaaaaaaaaaaa/cancel/", {"reason": "x"}
    )
    assert response.status_code == 404


def test_a_person_is_read_once_per_page(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    """The person page, the name search and the person filter each read the person once:
    an id lookup needs no second read of the person's hash."""
    claim(r, request("A", 9, (12,)), owner=str(buyer.id))
    client = client_for(staff)
    # One round trip per primary a pipeline reaches (one on one server): the session with the
    # staff member; the person's index read with the set of marked rooms (two primaries at
    # most), or the date shards with it (every primary of a cluster); then the one record
    # (room 9's).
    identity = identity_trips(r, client)
    marks = BOOKING_UNINDEXED_ROOMS.key()
    by_person = primaries_reached(r, [person_index(str(buyer.id)), marks]) + rooms_trips(r, [9])
    by_date = primaries_reached(r, [*date_indexes(), marks]) + rooms_trips(r, [9])
    pages = {
        # the identity; login summary (with is_staff); bookings
        f"/staff/people/{buyer.id}/": identity + 1 + by_person,
        # the identity; the name's id (then a redirect)
        f"/staff/people/?q={buyer.username}": identity + 1,
        # the identity; the name's id; bookings; names
        f"/staff/bookings/?person={buyer.username}": identity + 1 + by_date + 1,
    }
    for path, expected in pages.items():
        client.get(path)
        with round_trips() as trips:
            assert client.get(path).status_code in (200, 302)
        assert trips.count == expected, (path, trips.count)
    page = client.get(f"/staff/people/{buyer.id}/").content.decode()
    assert buyer.username in page and "staff</span>" not in page
    assert "staff</span>" in client.get(f"/staff/people/{staff.id}/").content.decode()


def test_a_class_c_floor_map_links_only_booked_cells_and_stays_light(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    """2,500 cells: a free cell has no bookings to list, so no link (no tab stop, no bytes)."""
    c = claim(r, request("C", 30, (3,), hour_start=9, hour_end=10, boxes="4"), owner=str(buyer.id))
    assert c.ok
    response = client_for(staff).get("/staff/occupancy/?date=2026-12-03&cls=C&floor=2")
    html = response.content.decode()
    detail = re.search(r'id="heat-rooms">(.*?)</table>', html, re.S)
    assert detail
    assert detail.group(1).count('<td class="heat heat-') == 2500
    links = re.findall(r'<a href="([^"]+)"', detail.group(1))
    assert links == [
        "/staff/bookings/?start=2026-12-03&amp;end=2026-12-03&amp;cls=C&amp;room=30&amp;box=4"
    ]
    assert len(response.content) < 150_000, len(response.content)


def test_the_held_overview_is_read_again_once_its_interval_has_passed(
    r: redis.Redis, world: World, buyer: Someone
) -> None:
    now = [100.0]
    overview_recent_forget()
    try:
        with time_machine.travel(DEC3, tick=False):
            first = overview_recent(client=r, max_age_ms=2000, clock=lambda: now[0])
            claim(r, request("A", 250, (3, 3)), owner=str(buyer.id))
            now[0] += 1.5
            held = overview_recent(client=r, max_age_ms=2000, clock=lambda: now[0])
            now[0] += 0.5
            fresh = overview_recent(client=r, max_age_ms=2000, clock=lambda: now[0])
    finally:
        overview_recent_forget()
    assert held.overview is first.overview and held.age_s == 1.5
    assert fresh.age_s == 0.0
    a_first, a_fresh = first.overview.classes[0], fresh.overview.classes[0]
    assert a_fresh.for_today == a_first.for_today + 1


def test_a_repair_after_a_failover_is_in_the_audit_log_in_both_languages(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    staff_audit_record(
        client=r,
        kind="failover_repair",
        actor_id="site",
        subject="5461 slots",
        detail="bookings=6 drained=2; waits=1",
    )
    client = client_for(staff)
    english = client.get("/staff/audit/?kind=failover_repair").content.decode()
    chinese = client.get("/staff/audit/?kind=failover_repair", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "repair after a failover" in english
    assert (
        "index entries of 6 bookings written again from their rooms; 2 bookings not yet "
        "indexed drained; 1 waits listed again for their buyers" in english
    )
    page = chinese.content.decode()
    assert "故障切换后的修复" in page
    assert "已按房间记录重写 6 个预订的索引条目" in page and "已为买家重新列出 1 个候补" in page
