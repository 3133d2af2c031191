"""Booking rules: what a request may be, and the one-day-ahead rule at midnight."""

from __future__ import annotations

import datetime as dt

import pytest
import redis
import time_machine
from django.test import override_settings
from django.utils import translation

from booking.domain.codes import (
    CODE_ALPHABET,
    code_for,
    code_mac,
    code_normalise,
    code_seal,
    code_unseal,
)
from booking.domain.parser import InvalidRequest, slot_request_parse
from booking.domain.records import booking_from_hash
from booking.domain.rules import booking_id_room, booking_new_id, calendar_day, site_zone
from booking.engine.claims import booking_claim
from tests.booking_support import BUYER, NOW, SHANGHAI, day, product_keys


def refusal(**fields: object) -> str:
    """The messages of a refused request, joined (English)."""
    fields.setdefault("now", NOW)
    with pytest.raises(InvalidRequest) as caught:
        slot_request_parse(**fields)  # type: ignore[arg-type]
    assert caught.value.errors, "a refusal names its problems"
    with translation.override("en"):
        return " | ".join(str(e) for e in caught.value.errors)


def test_valid_requests_of_each_class_parse_from_form_strings() -> None:
    a = slot_request_parse(cls="A", room="007", dates=["2026-12-03", "2026-12-02"], now=NOW)
    assert (a.cls, a.room, a.dates, a.hours, a.boxes) == ("A", 7, (day(2), day(3)), None, ())
    b = slot_request_parse(
        cls="b", room=300, dates="2026-12-05", hour_start="08:00", hour_end="12:00", now=NOW
    )
    assert (b.cls, b.room, b.hours) == ("B", 300, (8, 12))
    c = slot_request_parse(
        cls="C", room=1, dates=[day(31)], hour_start=23, hour_end="24:00", boxes="100, 1,1",
        now=NOW,
    )  # fmt: skip
    assert (c.hours, c.boxes, c.days) == ((23, 24), (1, 100), (calendar_day(day(31)),))


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"cls": "A", "hour_start": "08:00", "hour_end": "09:00"}, "Class A is booked by the day"),
        ({"cls": "B", "hour_start": "8", "hour_end": "9", "boxes": "3"}, "Class B has no boxes"),
        ({"cls": "A", "boxes": [1]}, "Class A has no boxes"),
        ({"cls": "B", "hour_start": "12:00", "hour_end": "12:00"}, "is empty"),
        ({"cls": "B", "hour_start": "14:00", "hour_end": "12:00"}, "ends before it starts"),
        ({"cls": "B", "hour_start": "08:00", "hour_end": "25:00"}, "25:00 is not an hour"),
        ({"cls": "B", "hour_start": "08:30", "hour_end": "10:00"}, "start on the hour"),
        ({"cls": "B", "hour_start": "24:00", "hour_end": "24:00"}, "cannot start at 24:00"),
        ({"cls": "B"}, "needs an hour range"),
        ({"cls": "C", "hour_start": 8, "hour_end": 9, "boxes": "0"}, "Box 0 does not exist"),
        ({"cls": "C", "hour_start": 8, "hour_end": 9, "boxes": [101]}, "Box 101 does not exist"),
        ({"cls": "C", "hour_start": 8, "hour_end": 9}, "at least one box"),
        ({"cls": "C", "hour_start": 8, "hour_end": 9, "boxes": "x"}, "not a box number"),
        ({"cls": "D"}, "Choose a class"),
        ({"cls": "A", "room": 301}, "Room 301 does not exist"),
        ({"cls": "A", "room": 0}, "Room 0 does not exist"),
        ({"cls": "A", "room": "7a"}, "room must be a number"),
        ({"cls": "A", "dates": ["2026-11-30"]}, "outside the season"),
        ({"cls": "A", "dates": ["2027-01-01"]}, "outside the season"),
        ({"cls": "A", "dates": ["2026-12-32"]}, "is not a date"),
        ({"cls": "A", "dates": []}, "at least one date"),
        ({"cls": "A", "dates": [f"2026-12-{d:02d}" for d in range(1, 32)] * 2}, "At most 31"),
    ],
)
def test_each_bad_request_is_refused_with_a_message_naming_the_problem(
    fields: dict[str, object], expected: str
) -> None:
    fields = {"room": 7, "dates": ["2026-12-03"], **fields}
    assert expected.lower() in refusal(**fields).lower()


def test_several_problems_are_all_named() -> None:
    text = refusal(cls="C", room=301, dates=["2026-11-01"], hour_start=25, hour_end=3, boxes=0)
    for part in ("Room 301", "outside the season", "not an hour", "Box 0"):
        assert part in text


@pytest.mark.parametrize(
    "hostile",
    ["7:1", "{room:1}", "*", "7 8", "7\n", "🦄", "x" * 5000, "A:7", "-1", "1e3", "０７"],
)
def test_hostile_values_are_refused_in_every_field(hostile: str) -> None:
    assert refusal(cls=hostile, room=7, dates=["2026-12-03"])
    assert refusal(cls="A", room=hostile, dates=["2026-12-03"])
    assert refusal(cls="A", room=7, dates=[hostile])
    assert refusal(cls="B", room=7, dates=["2026-12-03"], hour_start=hostile, hour_end="12")
    assert refusal(cls="C", room=7, dates=["2026-12-03"], hour_start=8, hour_end=9, boxes=[hostile])


def test_a_long_hostile_value_is_not_echoed_whole() -> None:
    assert len(refusal(cls="x" * 5000, room=7, dates=["2026-12-03"])) < 200


def test_messages_are_translated() -> None:
    with pytest.raises(InvalidRequest) as caught:
        slot_request_parse(cls="A", room=301, dates=["2026-12-03"], now=NOW)
    with translation.override("zh-hans"):
        chinese = str(caught.value.errors[0])
    with translation.override("en"):
        english = str(caught.value.errors[0])
    assert chinese != english


# --- One calendar day ahead, in the site's time zone --------------------------------------


def test_at_23_59_tomorrow_is_bookable_and_today_is_not() -> None:
    at = dt.datetime(2026, 12, 4, 23, 59, 59, tzinfo=SHANGHAI)
    with time_machine.travel(at, tick=False):
        assert slot_request_parse(cls="A", room=7, dates=[day(5)]).dates == (day(5),)
        assert "is today" in refusal(cls="A", room=7, dates=[day(4)], now=None)
        assert "in the past" in refusal(cls="A", room=7, dates=[day(3)], now=None)


def test_at_00_00_the_new_day_is_today_and_no_longer_bookable() -> None:
    at = dt.datetime(2026, 12, 5, 0, 0, 0, tzinfo=SHANGHAI)
    with time_machine.travel(at, tick=False):
        assert "is today" in refusal(cls="A", room=7, dates=[day(5)], now=None)
        assert slot_request_parse(cls="A", room=7, dates=[day(6)]).dates == (day(6),)


def test_the_rule_follows_the_site_zone_not_utc() -> None:
    # 2026-12-04 16:30 UTC is already 00:30 on December 5 in Shanghai.
    at = dt.datetime(2026, 12, 4, 16, 30, tzinfo=dt.UTC)
    with time_machine.travel(at, tick=False):
        assert "is today" in refusal(cls="A", room=7, dates=[day(5)], now=None)
    with override_settings(TIME_ZONE="UTC"), time_machine.travel(at, tick=False):
        assert slot_request_parse(cls="A", room=7, dates=[day(5)]).dates == (day(5),)


def test_the_zone_is_read_from_the_settings_once_per_change_of_them() -> None:
    kept = site_zone()
    assert site_zone() is kept  # a calendar's hundreds of look-ups read no settings
    with override_settings(TIME_ZONE="UTC"):
        assert site_zone().key == "UTC"
    assert site_zone() == kept


def test_a_request_parsed_before_midnight_is_refused_when_claimed_after(r: redis.Redis) -> None:
    before = dt.datetime(2026, 12, 4, 23, 59, 59, tzinfo=SHANGHAI)
    req = slot_request_parse(cls="A", room=7, dates=[day(5)], now=before)
    after = dt.datetime(2026, 12, 5, 0, 0, 0, tzinfo=SHANGHAI)
    with pytest.raises(InvalidRequest):
        booking_claim(
            client=r, owner_id=BUYER, request=req, booking_id=booking_new_id(room=7), now=after
        )
    assert product_keys(r) == []


# --- Ids and pickup codes ------------------------------------------------------------------


def test_booking_ids_carry_their_room_and_malformed_ids_have_none() -> None:
    booking_id = booking_new_id(room=42)
    assert booking_id.startswith("042-") and booking_id_room(booking_id) == 42
    assert booking_new_id(room=42) != booking_id
    for bad in ["", "042", "042-ABC", "301-" + "a" * 26, "042-" + "a" * 26 + "\n", None, 42]:
        assert booking_id_room(bad) is None


def test_pickup_codes_avoid_look_alikes_and_derive_from_the_id_and_the_secret() -> None:
    ids = [booking_new_id(room=7) for _ in range(200)]
    codes = {code_for(booking_id, 0) for booking_id in ids}
    assert len(codes) == 200
    for code in codes:
        assert len(code) == 10 and set(code) <= set(CODE_ALPHABET)
        assert not set(code) & set("0O1Il")
    assert code_for(ids[0], 0) == code_for(ids[0], 0) != code_for(ids[0], 1)
    code = code_for(ids[0], 0)
    with override_settings(SECRET_KEY="another-key"):
        assert code_for(ids[0], 0) != code
    assert code_normalise(f" {code[:5].lower()}-{code[5:]} ") == code
    assert code_normalise("0" * 10) == ""
    # A Chinese keyboard's full-width letters, digits and dashes, and other dashes, are read
    # as the plain ones.
    full_width = "".join(chr(ord(c) + 0xFEE0) for c in code)
    assert code_normalise(f"{full_width[:5]}\uff0d{full_width[5:]}") == code
    assert code_normalise(f"{code[:5]}\u2014{code[5:]}") == code
    assert code_normalise(f"{code[:5]}\u3000{code[5:]}") == code
    assert code_mac(7, code) != code_mac(8, code) and code not in code_mac(7, code)


def test_a_record_from_before_keeps_showing_its_sealed_code() -> None:
    sealed = code_seal("ABCDEFGHJK")
    old = booking_from_hash(
        {"id": "007-" + "a" * 26, "owner": "1", "cls": "A", "room": "7", "dates": "2026-12-03",
         "created": "0", "status": "confirmed", "code_sealed": sealed}
    )  # fmt: skip
    assert old is not None and old.pickup_code() == "ABCDEFGHJK"
    with override_settings(SECRET_KEY="another-key"):
        assert code_unseal(sealed) == "" and old.pickup_code() == ""
