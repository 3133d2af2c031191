"""Past days are compacted: a month's bitmaps go once its pickups are over; records, codes,
references, index entries, audit entries and statistics stay STRONGROOM_RETENTION_DAYS, then
go too. Nothing of a day that can still be picked up or sold is touched."""

from __future__ import annotations

import datetime as dt
import io

import redis
import time_machine
from django.core.management import call_command
from django.test import override_settings

from booking.domain.codes import code_for
from booking.domain.keys import RoomKeys, date_index, person_index
from booking.engine.bookings import booking_get
from booking.engine.compaction import past_compact
from strongroom.decoders import text_list
from tests.booking_support import BUYER, SHANGHAI, claim, request


def at(year: int, month: int, day: int, hour: int = 12) -> dt.datetime:
    return dt.datetime(year, month, day, hour, tzinfo=SHANGHAI)


def test_a_past_month_s_bitmaps_go_once_its_pickups_are_over(r: redis.Redis) -> None:
    a = claim(r, request("A", room=7, dates=(3,))).booking
    c = claim(r, request("C", room=5, dates=(31,), hour_start=22, hour_end=24, boxes="1")).booking
    assert a and c
    december = [RoomKeys(7).inventory("A", "2026-12"), RoomKeys(5).inventory("C", "2026-12")]
    for moment in (at(2026, 12, 15), at(2027, 1, 1, 0)):
        # During the month, and on the night its last day's pickups run on: nothing goes.
        assert past_compact(client=r, now=moment).bitmaps == 0
        assert all(r.exists(key) for key in december)
    done = past_compact(client=r, now=at(2027, 1, 2))
    assert done.bitmaps == 2 and done.bookings == 0
    assert not any(r.exists(key) for key in december)
    assert not r.exists(RoomKeys(7).registry) and not r.exists(RoomKeys(5).registry)
    # The records, their codes, the audit and the statistics stay.
    kept = booking_get(client=r, booking_id=a.id)
    assert kept is not None and kept.status == "confirmed"
    mac = r.hget(RoomKeys(7).record(a.id), "code_mac")
    assert mac and r.hget(RoomKeys(7).codes, mac) == a.id
    assert r.xlen(RoomKeys(7).audit) >= 1
    assert r.hexists(RoomKeys(7).stats, "slots:2026-12:A")


def test_records_audit_and_statistics_go_after_the_retention(r: redis.Redis) -> None:
    booking = claim(r, request("A", room=7, dates=(3,))).booking
    later = claim(r, request("B", room=7, dates=(20,), hour_start=8, hour_end=9)).booking
    assert booking and later
    with override_settings(STRONGROOM_RETENTION_DAYS=30):
        # January 10: December 3 is 38 days back, December 20 only 21: only the first goes.
        done = past_compact(client=r, now=at(2027, 1, 10))
        assert done.bookings == 1
        assert booking_get(client=r, booking_id=booking.id) is None
        assert booking_get(client=r, booking_id=later.id) is not None
        keys = RoomKeys(7)
        assert not r.sismember(keys.ledger, booking.id)
        assert booking.id not in r.hvals(keys.codes) and booking.id not in r.hvals(keys.refs)
        assert r.zscore(person_index(BUYER), booking.id) is None
        assert r.zscore(person_index(BUYER), later.id) is not None
        assert not any(m.startswith(booking.id) for m in text_list(r.zrange(date_index(7), 0, -1)))
        assert r.hexists(keys.stats, "slots:2026-12:B"), "December ended 10 days ago"
        with time_machine.travel(at(2027, 2, 15), tick=False):
            out = io.StringIO()
            call_command("compact", stdout=out)
        assert "1 bookings older than 30 days" in out.getvalue()
        assert booking_get(client=r, booking_id=later.id) is None
        assert not [f for f in r.hkeys(keys.stats) if ":2026-12:" in f]
        assert r.xlen(keys.audit) == 0
    # The pickup code of a dropped booking no longer opens anything (the code is gone).
    assert code_for(booking.id, 0) and not r.hlen(RoomKeys(7).codes)
