"""`manage.py upgradestore` moves a store written in the season layout (the test writes one, as
the season-layout functions wrote it) to the calendar layout with every booking, hold, wait,
pickup code, statistic and index in place and nothing resold; a site started on a store that
still needs it refuses to start and names the command. One server and (STRONGROOM_TEST_STORE=
cluster) the 3-primary cluster."""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.core.management import call_command
from django.core.management.base import CommandError
from redis.typing import EncodableT, FieldT

from booking.domain.codes import code_for, code_mac
from booking.domain.keys import (
    RoomKeys,
    date_index,
    date_member,
    date_score,
    person_index,
    person_score,
)
from booking.domain.parser import slot_request_parse
from booking.domain.rules import booking_new_id, hold_new_id
from booking.engine.bookings import booking_get, hold_get
from booking.engine.cancel import booking_cancel
from booking.engine.claims import booking_claim
from booking.engine.pickup import booking_pickup
from booking.engine.stats import season_stats
from booking.engine.upgrade import UpgradeNeeded, layout_check, legacy_rooms
from booking.engine.waits import waits_of
from strongroom import keyspace as ks
from strongroom.clock import to_ms
from tests.booking_support import BUYER, NOW, SECOND_BUYER, SHANGHAI, STAFF, snapshot

THIRD_BUYER = "103"
SEASON = dt.date(2026, 12, 1)  # the old site's season: December, days counted from the 1st
D = dt.date


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def legacy_booking(
    client: redis.Redis, *, owner: str, cls: str, room: int, dates: list[dt.date],
    hours: tuple[int, int] = (0, 0), boxes: tuple[int, ...] = (), status: str = "confirmed",
) -> str:  # fmt: skip
    """One booking as the season-layout claim wrote it: bits in the season's bitmap, the
    record (season, days counted from it), code, reference, ledger, indexes."""
    keys, booking_id = RoomKeys(room), booking_new_id(room=room)
    inv = keys.inventory(cls, SEASON.isoformat())  # the old key: named by the season's 1st day
    days = [(d - SEASON).days for d in dates]
    if status == "confirmed":
        mask = (1 << 24) - (1 << (24 - hours[1])) - ((1 << 24) - (1 << (24 - hours[0])))
        for day in days:
            if cls == "A":
                client.setbit(inv, day, 1)
            for box in boxes or ((None,) if cls == "B" else ()):
                at = day * 24 if box is None else (day * 100 + box - 1) * 24
                client.bitfield(inv).set("u24", at, mask).execute()
        client.sadd(keys.registry, inv)
    code = code_for(booking_id, 0)
    reference = f"B-{room:04d}-{len(days)}{cls}22"
    record: dict[FieldT, EncodableT] = {
        "id": booking_id, "owner": owner, "cls": cls, "room": f"{room:03d}",
        "season": SEASON.isoformat(), "days": ",".join(map(str, days)),
        "dates": ",".join(d.isoformat() for d in dates), "hstart": str(hours[0]),
        "hend": str(hours[1]), "boxes": ",".join(map(str, boxes)), "created": to_ms(NOW),
        "status": status, "code_mac": code_mac(room, code), "code_n": "0", "collected": "",
        "inv": inv, "made": "2026-11-21", "ref": reference,
    }  # fmt: skip
    if status == "cancelled":
        record |= {"cancelled_at": to_ms(NOW), "cancelled_by": owner, "cancel_reason": "x"}
    client.hset(keys.record(booking_id), mapping=record)
    client.hset(keys.codes, code_mac(room, code), booking_id)
    client.hset(keys.refs, reference, booking_id)
    client.sadd(keys.ledger, booking_id)
    client.zadd(person_index(owner), {booking_id: person_score(tuple(dates))})
    client.zadd(
        date_index(room),
        {date_member(booking_id, d): date_score(d, cls, room) for d in dates},
    )
    # Season-layout statistics (the upgrade recomputes them).
    client.hset(keys.stats, mapping={"v": "1", f"slots:{SEASON.isoformat()}:{cls}": "0000009"})
    return booking_id


def legacy_store(client: redis.Redis) -> dict[str, str]:
    ids = {
        "a": legacy_booking(client, owner=BUYER, cls="A", room=10, dates=[D(2026, 12, 10)]),
        "c": legacy_booking(
            client,
            owner=BUYER,
            cls="C",
            room=5,
            dates=[D(2026, 12, 20), D(2026, 12, 21)],
            hours=(8, 10),
            boxes=(3, 4),
        ),
        "b": legacy_booking(
            client,
            owner=SECOND_BUYER,
            cls="B",
            room=7,
            dates=[D(2026, 12, 15)],
            hours=(9, 12),
            status="cancelled",
        ),
    }
    # A live hold of the second buyer on class A, room 11, December 12 (season day 11).
    hold_id, keys = hold_new_id(room=11), RoomKeys(11)
    expiry = to_ms(NOW) + 600_000
    client.hset(keys.holds, hold_id, f"{expiry}|{SECOND_BUYER}|A|11|0|0|")
    client.zadd(keys.hold_days, {f"{hold_id}/11": 1 * 1000 + 11})
    client.pexpire(keys.holds, 600_000)
    client.pexpire(keys.hold_days, 600_000)
    # The second buyer waits for class A, room 10, December 10 (season day 9): sold out.
    member = f"{SECOND_BUYER}|A|9|0|0|0"
    client.zadd(RoomKeys(10).waits, {member: to_ms(NOW)})
    client.zadd(
        ks.BOOKING_WAITS_BY_PERSON.key(owner_id=SECOND_BUYER),
        {f"010|{member}": to_ms(dt.datetime(2026, 12, 10, tzinfo=SHANGHAI))},
    )
    client.sadd(ks.BOOKING_WAIT_ROOMS.key(), "010")
    return {**ids, "hold": hold_id}


def take(client: redis.Redis, **part: Any) -> Any:
    req = slot_request_parse(now=NOW, **part)
    return booking_claim(
        client=client, owner_id=THIRD_BUYER, request=req,
        booking_id=booking_new_id(room=req.room), now=NOW,
    )  # fmt: skip


def test_a_site_on_a_season_layout_store_refuses_to_start_and_names_the_command(
    r: redis.Redis,
) -> None:
    legacy_store(r)
    with pytest.raises(UpgradeNeeded, match=r"manage\.py upgradestore"):
        layout_check(client=r)
    with pytest.raises(CommandError, match=r"manage\.py upgradestore"):
        call_command("serve", "--no-demo", "--keep-store", stdout=io.StringIO())
    assert not r.exists(ks.STORE_LAYOUT.key())


def test_an_empty_store_is_marked_and_served(r: redis.Redis) -> None:
    layout_check(client=r)
    assert r.get(ks.STORE_LAYOUT.key()) == "calendar-1"


def test_upgradestore_moves_everything_and_resells_nothing(r: redis.Redis) -> None:
    ids = legacy_store(r)
    assert legacy_rooms(client=r) == [5, 7, 10, 11]
    out = io.StringIO()
    call_command("upgradestore", stdout=out)
    assert "4 rooms of 4 found, 3 bookings, 1 holds, 1 waits" in out.getvalue()
    layout_check(client=r)  # served now
    assert legacy_rooms(client=r) == []
    # Bookings, with their days, statuses and references, and the indexes that list them.
    a, c, b = (booking_get(client=r, booking_id=ids[n]) for n in ("a", "c", "b"))
    assert a and c and b
    assert (a.dates, a.status) == ((D(2026, 12, 10),), "confirmed")
    assert (c.dates, c.boxes, c.hours) == ((D(2026, 12, 20), D(2026, 12, 21)), (3, 4), (8, 10))
    assert b.status == "cancelled"
    assert r.zscore(person_index(BUYER), ids["a"]) is not None
    # Nothing is sold twice: the sold and held slots are refused to a third buyer.
    assert not take(r, cls="A", room=10, dates=["2026-12-10"]).ok
    refused = take(r, cls="C", room=5, dates=["2026-12-21"], hour_start=9, hour_end=10, boxes="4")
    assert not refused.ok and {s.date for s in refused.taken} == {D(2026, 12, 21)}
    held = take(r, cls="A", room=11, dates=["2026-12-12"])
    assert not held.ok and all(s.held for s in held.taken)
    # The hold and the wait keep their dates.
    hold = hold_get(client=r, hold_id=ids["hold"], now=NOW)
    assert hold is not None and hold.request.dates == (D(2026, 12, 12),)
    waits = waits_of(client=r, owner_id=SECOND_BUYER, now=NOW)
    assert [(w.wait.room, w.wait.cls, w.wait.date) for w in waits] == [(10, "A", D(2026, 12, 10))]
    # The statistics, recomputed in the calendar layout.
    stats = {s.cls: s for s in season_stats(client=r, now=NOW).classes}
    per_day = {d.date: d.booked for d in stats["C"].occupancy.days}
    assert per_day[D(2026, 12, 20)] == per_day[D(2026, 12, 21)] == 4
    assert stats["A"].occupancy.booked == 1 and stats["C"].statuses["confirmed"] == 1
    assert stats["B"].statuses["cancelled"] == 1 and stats["B"].occupancy.booked == 0
    # Running it again changes nothing.
    before = snapshot(r)
    call_command("upgradestore", stdout=io.StringIO())
    assert snapshot(r) == before
    # The pickup code still opens the safe on its day; a cancel frees exactly its slots.
    with time_machine.travel(dt.datetime(2026, 12, 10, 10, tzinfo=SHANGHAI), tick=False):
        picked = booking_pickup(client=r, room=10, code=code_for(ids["a"], 0))
    assert picked.outcome == "collected"
    cancelled = booking_cancel(client=r, booking_id=ids["c"], actor_id=STAFF, actor_is_staff=True)
    assert cancelled.ok
    assert take(r, cls="C", room=5, dates=["2026-12-21"], hour_start=9, hour_end=10, boxes="4").ok
    assert not take(r, cls="C", room=5, dates=["2026-12-21"], hour_start=9, hour_end=10,
                    boxes="4").ok  # fmt: skip
