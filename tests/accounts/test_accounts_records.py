"""Login records: count, last login, the recent list, the leaderboard, and the dashboard reads."""

from __future__ import annotations

import datetime as dt

import pytest
import redis
import time_machine
from django.test import Client

from accounts.selectors import login_summary, logins_recent, logins_top
from accounts.services import login_record
from strongroom.keyspace import LOGIN_FAILURES, LOGINS_RECENT, LOGINS_TOP, PERSON, PERSON_BY_NAME
from strongroom.store import primaries_reached, round_trips

T0 = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)


def login(client: Client, someone) -> None:
    response = client.post(
        "/accounts/login/", {"username": someone.username, "password": someone.password}
    )
    assert response.status_code == 302


def test_three_logins_by_two_people(r: redis.Redis, buyer, second_buyer):
    with time_machine.travel(T0, tick=False) as clock:
        login(Client(), buyer)
        clock.shift(dt.timedelta(minutes=1))
        login(Client(), second_buyer)
        clock.shift(dt.timedelta(minutes=1))
        login(Client(), buyer)

    anna = login_summary(client=r, person_id=buyer.id)
    bo = login_summary(client=r, person_id=second_buyer.id)
    assert anna is not None and bo is not None
    assert (anna.logins, anna.last_login) == (2, T0 + dt.timedelta(minutes=2))
    assert (bo.logins, bo.last_login) == (1, T0 + dt.timedelta(minutes=1))

    recent = logins_recent(client=r, limit=10)
    assert [(entry.username, entry.at) for entry in recent] == [
        (buyer.username, T0 + dt.timedelta(minutes=2)),
        (second_buyer.username, T0 + dt.timedelta(minutes=1)),
        (buyer.username, T0),
    ]
    top = logins_top(client=r, limit=10)
    assert [(rank.username, rank.logins) for rank in top] == [
        (buyer.username, 2),
        (second_buyer.username, 1),
    ]
    assert r.zscore(LOGINS_TOP.key(), str(buyer.id)) == 2


def test_recent_list_is_trimmed_to_the_setting(r: redis.Redis, buyer, second_buyer, settings):
    settings.STRONGROOM_RECENT_LOGINS = 5
    for n in range(12):
        person = buyer if n % 3 else second_buyer
        login_record(client=r, person_id=person.id, at_ms=1_000 + n)
    assert r.llen(LOGINS_RECENT.key()) == 5
    recent = logins_recent(client=r, limit=50)
    assert [round(entry.at.timestamp() * 1000) for entry in recent] == [
        1011,
        1010,
        1009,
        1008,
        1007,
    ]
    assert logins_top(client=r, limit=1)[0].username == buyer.username


def test_recent_list_defaults_to_the_newest_100(r: redis.Redis, buyer):
    for n in range(130):
        login_record(client=r, person_id=buyer.id, at_ms=n)
    assert r.llen(LOGINS_RECENT.key()) == 100
    summary = login_summary(client=r, person_id=buyer.id)
    assert summary is not None and summary.logins == 130


def test_reads_on_an_empty_store_are_empty(r: redis.Redis):
    assert logins_recent(client=r) == []
    assert logins_top(client=r) == []
    assert login_summary(client=r, person_id=42) is None


def test_a_login_record_is_one_round_trip_per_primary_it_writes(r: redis.Redis, buyer):
    with round_trips() as trips:
        login_record(client=r, person_id=buyer.id)
    # One server: one round trip. A cluster: the person's slot and {people} (maybe one node).
    assert trips.count == primaries_reached(r, [PERSON.key(person_id=buyer.id), LOGINS_TOP.key()])


@pytest.mark.parametrize(
    "read",
    [
        lambda r, p: logins_recent(client=r, limit=20),
        lambda r, p: logins_top(client=r, limit=20),
        lambda r, p: login_summary(client=r, person_id=p.id),
    ],
    ids=["recent", "top", "summary"],
)
def test_each_dashboard_read_is_one_round_trip(r: redis.Redis, buyer, second_buyer, read):
    for person in (buyer, second_buyer, buyer):
        login_record(client=r, person_id=person.id)
    with round_trips() as trips:
        assert read(r, buyer)
    assert trips.count == 1


def test_the_whole_login_request_has_a_fixed_round_trip_budget(r: redis.Redis, buyer):
    """Throttle check with the name, person, the record (one), session rotate and save."""
    client = Client()
    with round_trips() as trips:
        login(client, buyer)
    # On a cluster a pipeline is one round trip per primary it reaches: the throttle's gate
    # with the name lookup ({throttle} and {people}), the login record (the person and {people}).
    gate = primaries_reached(r, [LOGIN_FAILURES.key(pair="any"), PERSON_BY_NAME.key()])
    record = primaries_reached(r, [PERSON.key(person_id=buyer.id), LOGINS_TOP.key()])
    assert trips.count == LOGIN_REQUEST_ROUND_TRIPS - 2 + gate + record


# No session to load yet (no cookie). The throttle's gate with the name lookup 1, person 1, the
# login record 1, the throttle told it passed 1; the rotated session: a fresh key naming the
# person (SET NX, no EXISTS probe) 1, the signed-in save 1.
LOGIN_REQUEST_ROUND_TRIPS = 6
