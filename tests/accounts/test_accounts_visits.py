"""Visit records: page views and unique visitors per day, counted in memory and written in
batches (no round trip on the page), never failing a page."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from django.conf import settings
from django.test import Client

from accounts import visits
from accounts.selectors import visits_by_day, visits_today
from accounts.sessions import SessionStore
from strongroom import embedded
from strongroom.keyspace import VISITS_SHARDS, VISITS_VIEWS, VISITS_VISITORS
from strongroom.store import connect, primaries_reached, round_trips
from tests.store_support import identity_trips, keys_changed, keys_stored

# 10:00 in Shanghai on 2026-11-20 (the site's day), 02:00 UTC.
NOON_ISH = dt.datetime(2026, 11, 20, 2, 0, tzinfo=dt.UTC)
DAY = dt.date(2026, 11, 20)


def anonymous(agent: str = "Firefox", ip: str = "203.0.113.9") -> Client:
    return Client(REMOTE_ADDR=ip, HTTP_USER_AGENT=agent)


def with_session(agent: str = "Firefox") -> Client:
    session = SessionStore()
    session["seen"] = True
    session.save()
    assert session.session_key is not None  # save() made one
    client = anonymous(agent)
    client.cookies[settings.SESSION_COOKIE_NAME] = session.session_key
    return client


def today(r: redis.Redis) -> tuple[int, int]:
    visits.visits_flush()
    counts = visits_today(client=r)
    return counts.views, counts.visitors


@pytest.fixture(autouse=True)
def frozen_day():
    with time_machine.travel(NOON_ISH, tick=False):
        yield


def test_anonymous_visitors_count_by_address_and_agent(r: redis.Redis):
    first = anonymous()
    assert first.get("/").status_code == 200
    first.get("/accounts/login/")
    anonymous().get("/")  # same address, same browser: the same visitor
    anonymous(agent="Chrome").get("/")
    anonymous(ip="198.51.100.4").get("/")
    assert today(r) == (5, 3)


def test_anonymous_visitors_with_a_session_count_by_session(r: redis.Redis):
    one, two = with_session(), with_session()
    for client in (one, two, one):
        assert client.get("/").status_code == 200
    assert today(r) == (3, 2)


def test_a_signed_in_person_is_one_visitor_on_every_device(r: redis.Redis, buyer, client_for):
    phone, laptop = client_for(buyer), client_for(buyer)
    phone.get("/")
    laptop.get("/accounts/me/")
    phone.get("/accounts/me/")
    anonymous().get("/")
    assert today(r) == (4, 2)


def test_only_successful_html_page_views_count(r: redis.Redis, buyer):
    client = anonymous()
    client.get("/no-such-page/")
    client.post("/accounts/login/", {"username": buyer.username, "password": "wrong"})
    client.get("/healthz")
    client.head("/catalog/")  # a link checker's probe
    assert today(r) == (0, 0)


def test_visit_counters_expire_after_the_configured_days(r: redis.Redis, settings):
    settings.STRONGROOM_VISITS_KEEP_DAYS = 7
    anonymous().get("/")
    visits.visits_flush()
    keys = [
        family.key(shard=shard, day=DAY.isoformat())
        for family in (VISITS_VIEWS, VISITS_VISITORS)
        for shard in range(VISITS_SHARDS)
    ]
    written = [key for key in keys if r.exists(key)]
    assert len(written) == 2  # one views counter, one visitors HyperLogLog
    for key in written:
        assert 7 * 86400 < r.ttl(key) <= 8 * 86400


def test_the_raw_address_never_reaches_the_store():
    visitor = visits.visitor_id(
        person_id=None, session_key=None, ip="203.0.113.9", user_agent="Firefox", day=DAY
    )
    assert "203.0.113.9" not in visitor and visitor.startswith("a:")
    next_day = visits.visitor_id(
        person_id=None,
        session_key=None,
        ip="203.0.113.9",
        user_agent="Firefox",
        day=DAY + dt.timedelta(days=1),
    )
    assert next_day != visitor  # the salt changes daily: visitors cannot be followed across days


def test_days_use_the_site_time_zone(r: redis.Redis):
    with time_machine.travel(dt.datetime(2026, 11, 20, 16, 30, tzinfo=dt.UTC), tick=False):
        anonymous().get("/")  # 00:30 on the 21st in Shanghai
    visits.visits_flush()
    rows = visits_by_day(client=r, start=DAY, end=DAY + dt.timedelta(days=1))
    assert [(row.day, row.views) for row in rows] == [(DAY, 0), (DAY + dt.timedelta(days=1), 1)]


def test_a_date_range_is_one_round_trip(r: redis.Redis):
    anonymous().get("/")
    anonymous(agent="Chrome").get("/")
    visits.visits_flush()
    start = DAY - dt.timedelta(days=29)
    with round_trips() as trips:
        rows = visits_by_day(client=r, start=start, end=DAY)
    # One pipeline over every shard of every day: one round trip per primary it reaches.
    days = [(start + dt.timedelta(days=n)).isoformat() for n in range(30)]
    shards = [family.key(shard=shard, day=day) for day in days for shard in range(VISITS_SHARDS)
              for family in (VISITS_VIEWS, VISITS_VISITORS)]  # fmt: skip
    assert trips.count == primaries_reached(r, shards)
    assert len(rows) == 30 and (rows[-1].views, rows[-1].visitors) == (2, 2)
    assert sum(row.views for row in rows[:-1]) == 0


def test_a_reversed_or_huge_range_is_refused(r: redis.Redis):
    with pytest.raises(ValueError):
        visits_by_day(client=r, start=DAY, end=DAY - dt.timedelta(days=1))
    with pytest.raises(ValueError):
        visits_by_day(client=r, start=DAY, end=DAY + dt.timedelta(days=400))


def test_an_anonymous_page_view_costs_no_round_trip(r: redis.Redis):
    client = anonymous()
    with round_trips() as trips:
        assert client.get("/").status_code == 200
    assert trips.count == 0
    assert visits.visits_pending() == 1


def test_a_signed_in_page_view_costs_one_round_trip(r: redis.Redis, buyer, client_for):
    """The session and the person (request.user in the page header) in one pipeline."""
    client = client_for(buyer)
    with round_trips() as trips:
        assert client.get("/").status_code == 200
    # On a cluster the session and the person may sit on two primaries.
    assert trips.count == identity_trips(r, client)
    assert today(r) == (1, 1)


def test_a_page_view_is_written_only_by_the_flush(r: redis.Redis, buyer, client_for):
    client = client_for(buyer)
    before = keys_changed(r)
    for _ in range(5):
        assert client.get("/").status_code == 200
    assert keys_changed(r) == before
    assert visits.visits_pending() == 5
    with round_trips() as trips:
        assert visits.visits_flush() == 5
    # Every day and shard in one pipeline: one round trip per primary the written keys are on.
    written = [
        key for key in keys_stored(r) if VISITS_VIEWS.matches(key) or VISITS_VISITORS.matches(key)
    ]
    assert trips.count == primaries_reached(r, written)
    assert visits.visits_pending() == 0
    assert today(r) == (5, 1)


def test_requests_that_are_no_page_views_are_not_counted(r: redis.Redis, buyer, staff, client_for):
    client_for(buyer).get("/no-such-page/")  # 404, rendered with the person in the header
    client_for(staff).get("/staff/bookings/export.csv")  # a download, not a page
    assert today(r) == (0, 0)
    client_for(buyer).get("/")
    assert today(r) == (1, 1)


def test_htmx_fragments_are_not_page_views_but_a_history_restore_is(
    r: redis.Redis, buyer, client_for
):
    client = client_for(buyer)
    calendar = "/book/parts/calendar/?cls=A&room=7&month=2026-12"
    assert client.get(calendar, headers={"HX-Request": "true"}).status_code == 200
    assert client.get("/book/?cls=A&room=7", headers={"HX-Request": "true"}).status_code == 200
    assert today(r) == (0, 0)
    restore = {"HX-Request": "true", "HX-History-Restore-Request": "true"}
    assert client.get("/book/?cls=A&room=7", headers=restore).status_code == 200
    assert client.get("/book/?cls=A&room=7").status_code == 200
    assert today(r) == (2, 1)


def test_visitors_spread_over_the_shards_and_add_up(r: redis.Redis):
    for n in range(200):
        anonymous(agent=f"Agent {n}").get("/")
    assert today(r) == (200, 200)
    counts = [
        r.pfcount(VISITS_VISITORS.key(shard=shard, day=DAY.isoformat()))
        for shard in range(VISITS_SHARDS)
    ]
    assert all(count > 0 for count in counts)  # no one shard takes every visitor
    slots = {
        r.execute_command("CLUSTER KEYSLOT", VISITS_VISITORS.key(shard=shard, day=DAY.isoformat()))
        for shard in range(VISITS_SHARDS)
    }
    assert len(slots) == VISITS_SHARDS  # one hash tag, one cluster slot per shard


def test_revoked_staff_rights_end_on_the_next_page_view(r: redis.Redis, staff, client_for):
    from accounts.services import staff_set

    client = client_for(staff)
    assert client.get("/staff/").status_code == 200
    staff_set(client=r, person_id=staff.id, is_staff=False)
    assert client.get("/staff/").status_code == 403


def test_a_failed_flush_keeps_the_views_for_the_next_one(r: redis.Redis, buyer, client_for, caplog):
    views_keys = [VISITS_VIEWS.key(shard=n, day=DAY.isoformat()) for n in range(VISITS_SHARDS)]
    for key in views_keys:
        r.hset(key, "not", "a counter")  # INCRBY fails: WRONGTYPE
    page = client_for(buyer).get("/accounts/me/")
    assert page.status_code == 200
    assert buyer.username in page.content.decode()
    with caplog.at_level(logging.WARNING, logger="accounts.visits"):
        assert visits.visits_flush() == 0
    assert "not written" in caplog.text
    assert visits.visits_pending() == 1  # kept, not lost
    for key in views_keys:
        r.delete(key)
    assert today(r) == (1, 1)


@pytest.fixture
def dead_store(tmp_path: Path):
    """A real client whose server has been stopped."""
    data_dir = tmp_path / "gone"
    data_dir.mkdir()
    url = embedded.ensure_running(data_dir)
    client = connect(url)
    client.ping()
    embedded.stop(data_dir)
    yield client
    client.close()


def test_a_page_renders_and_its_view_waits_while_the_store_is_away(
    r: redis.Redis, buyer, client_for, dead_store, monkeypatch, caplog
):
    with pytest.raises(redis.ConnectionError):
        dead_store.ping()
    monkeypatch.setattr(visits, "visits_client", lambda: dead_store)
    assert anonymous().get("/").status_code == 200
    page = client_for(buyer).get("/accounts/me/")
    assert page.status_code == 200
    assert buyer.username in page.content.decode()
    with caplog.at_level(logging.WARNING, logger="accounts.visits"):
        assert visits.visits_flush() == 0
    assert "the store did not answer" in caplog.text
    assert "Traceback" not in caplog.text  # an outage is one line, not a trace per flush
    monkeypatch.undo()
    assert today(r) == (2, 2)  # written once the store answers again


def test_views_sent_while_the_store_stalled_are_counted_once(tmp_path: Path) -> None:
    """A flush sent to a stalled store gets no answer, but the store runs it once it wakes:
    sent again with the views gathered since merged in, the stall's views counted twice (an
    outside check: 30 pages became 60 views). Now the views in doubt go again alone, under
    their id, and the store adds them once."""
    import os
    import signal

    from strongroom.store import load_functions
    from tests.store.test_store_stall import servers_on

    data_dir = tmp_path / "stalls"
    data_dir.mkdir()
    client = connect(embedded.ensure_running(data_dir))
    try:
        load_functions(client)
        batch = visits.VisitBatch(client=lambda: client, interval_ms=lambda: 0)
        for n in range(30):
            batch.add(day=DAY, visitor=f"s:{n}")
        [pid] = servers_on(data_dir)
        os.kill(pid, signal.SIGSTOP)
        try:
            assert batch.flush() == 0  # no answer within the timeout: kept
        finally:
            os.kill(pid, signal.SIGCONT)
        batch.add(day=DAY, visitor="s:late")
        assert batch.pending_views() == 31
        assert batch.flush() == 30  # the 30 in doubt, alone: the store had them already
        assert batch.flush() == 1
        views = sum(
            int(client.get(VISITS_VIEWS.key(shard=n, day=DAY.isoformat())) or 0)
            for n in range(VISITS_SHARDS)
        )
        assert views == 31
    finally:
        client.close()
        embedded.stop(data_dir)


def test_a_graceful_exit_writes_the_views_in_doubt_and_those_gathered_behind_them(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store ran the last flush but its answer was lost; one more view came; the worker
    stops: both are written, once each."""
    calls = {"n": 0}
    real = visits.visits_write

    def first_answer_lost(**kwargs: Any) -> bool:
        written = real(**kwargs)
        calls["n"] += 1
        if calls["n"] == 1:
            raise redis.ConnectionError("the answer was lost")
        return written

    batch = visits.VisitBatch(client=lambda: r, interval_ms=lambda: 0)
    for n in range(3):
        batch.add(day=DAY, visitor=f"s:{n}")
    monkeypatch.setattr(visits, "visits_write", first_answer_lost)
    assert batch.flush() == 0
    batch.add(day=DAY, visitor="s:late")
    batch.close()
    assert batch.pending_views() == 0
    assert today(r)[0] == 4
