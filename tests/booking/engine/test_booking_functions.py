"""The Redis Functions on their own: malformed calls write nothing, retried calls do not act twice.

These call FCALL directly, as a second caller (or a redis-py retry) would, so they prove what the
functions guarantee by themselves, not what the Python layer happens to check first.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import redis

from booking.domain.codes import code_mac
from booking.domain.formats import months_arg
from booking.domain.keys import (
    RoomKeys,
    date_index,
    date_score,
    pace_of,
    person_index,
    pickup_client_failures,
)
from booking.domain.records import flat_to_dict
from booking.domain.rules import booking_new_id, calendar_day
from booking.engine import audit
from booking.engine.cancel import booking_cancel
from booking.engine.holds import booking_hold
from booking.engine.pickup import booking_pickup
from strongroom.clock import to_ms
from strongroom.libraries import fcall
from tests.booking_support import BUYER, NOW, SHANGHAI, claim, request, snapshot

ROOM = RoomKeys(7)

DECEMBER = dt.date(2026, 12, 1)
DEC1 = calendar_day(DECEMBER)  # days travel as calendar day numbers
MONTHS = months_arg([DECEMBER])  # the one month (December) of the call's bitmap
# A valid class C claim of box 5, 08:00-10:00 on December 3; each case breaks one part.
GOOD = {"cls": "C", "days": str(DEC1 + 2), "hstart": "8", "hend": "10", "boxes": "5"}
MALFORMED = [
    {"cls": "X"},
    {"cls": "c"},
    {"cls": ""},
    {"days": ""},
    {"days": "-1"},
    {"days": str(DEC1 - 1)},  # November 30: not in the call's month
    {"days": str(DEC1 + 31)},  # January 1: not in it either
    {"days": "2.5"},
    {"days": f"{DEC1 + 2},{DEC1 + 2}"},
    {"days": ",".join(str(DEC1 + d) for d in range(31)) + f",{DEC1}"},
    {"days": "1e9"},
    {"hstart": "25", "hend": "26"},
    {"hstart": "10", "hend": "8"},
    {"hstart": "8", "hend": "8"},
    {"hstart": "-1"},
    {"hend": "25"},
    {"hstart": ""},
    {"boxes": ""},
    {"boxes": "0"},
    {"boxes": "101"},
    {"boxes": "5,5"},
    {"boxes": ",".join(str(b) for b in range(1, 102))},
    {"cls": "B"},  # a box on class B
    {"cls": "A", "boxes": ""},  # hours on class A
]


def claim_args(
    part: dict[str, str], booking_id: str, limit: object = 0, window: object = 0
) -> list[object]:
    values = {**GOOD, **part}
    return [
        BUYER, values["cls"], MONTHS, values["days"], values["hstart"], values["hend"],
        values["boxes"], booking_id, to_ms(NOW), code_mac(7, "ABCDEFGHJK"),
        0, "2026-12-03", "", 1000, "007", "2026-11-30", 20261203,
        date_score(dt.date(2026, 12, 3), "C", 7), "B-2222-2227", limit, window,
        values.get("first_day", "0"), values.get("mark_unsure", "1"), "", "",
    ]  # fmt: skip


def claim_keys(cls: str, booking_id: str) -> list[str]:
    return [
        ROOM.registry,
        ROOM.record(booking_id), ROOM.ledger, ROOM.codes, ROOM.holds, ROOM.audit, ROOM.stats,
        ROOM.hold_days, ROOM.unindexed, ROOM.refs, ROOM.outbox, ROOM.hold_streaks, ROOM.waits,
        ROOM.wait_notices, ROOM.gone, ROOM.closures, ROOM.edition,
        ROOM.inventory(cls if cls in ("A", "B", "C") else "C", DECEMBER),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "part", MALFORMED, ids=lambda p: ",".join(f"{k}={v[:12]}" for k, v in p.items())
)
def test_a_malformed_claim_is_refused_by_the_function_before_any_write(
    r: redis.Redis, part: dict[str, str]
) -> None:
    before = snapshot(r)
    booking_id = booking_new_id(room=7)
    reply = fcall(r, "booking_claim", claim_keys(part.get("cls", "C"), booking_id),
                  claim_args(part, booking_id))  # fmt: skip
    assert reply[0] == "invalid"
    assert snapshot(r) == before


@pytest.mark.parametrize(
    "part", MALFORMED, ids=lambda p: ",".join(f"{k}={v[:12]}" for k, v in p.items())
)
def test_a_malformed_hold_is_refused_by_the_function_before_any_write(
    r: redis.Redis, part: dict[str, str]
) -> None:
    values = {**GOOD, **part}
    before = snapshot(r)
    args = [
        BUYER, values["cls"], values["days"], values["hstart"], values["hend"], values["boxes"],
        booking_new_id(room=7), to_ms(NOW), 60_000, 1000, "007", MONTHS, 0, 0,
        values.get("first_day", "0"),
    ]  # fmt: skip
    reply = fcall(
        r,
        "booking_hold",
        [
            ROOM.holds,
            ROOM.audit,
            ROOM.hold_days,
            ROOM.hold_streaks,
            ROOM.gone,
            ROOM.closures,
            ROOM.edition,
            ROOM.waits,
            ROOM.inventory("C", DECEMBER),
        ],
        args,
    )
    assert reply[0] == "invalid"
    assert snapshot(r) == before


def test_the_valid_call_the_cases_start_from_is_accepted(r: redis.Redis) -> None:
    booking_id = booking_new_id(room=7)
    reply = fcall(r, "booking_claim", claim_keys("C", booking_id), claim_args({}, booking_id))
    assert reply[0] == "ok"
    # The record it answers with (built as written, not read back) is the stored one, and so
    # is the answer to a retry of the same call (read back).
    stored = r.hgetall(ROOM.record(booking_id))
    assert flat_to_dict(reply[1]) == stored
    again = fcall(r, "booking_claim", claim_keys("C", booking_id), claim_args({}, booking_id))
    assert again[0] == "ok"
    assert flat_to_dict(again[1]) == stored


@pytest.mark.parametrize(
    ("pace_keys", "limit", "window"),
    [([], 20, 3_600_000), (["pace"], 0, 0), (["pace"], 20, "x"), (["pace"], "many", 3_600_000)],
)
def test_an_allowance_without_its_key_or_a_key_without_an_allowance_is_refused(
    one_server: redis.Redis, pace_keys: list[str], limit: object, window: object
) -> None:
    """The allowance rides in the claim only with the buyer's pace key after the index keys
    (one server); anything else is a malformed call, refused before any write."""
    booking_id = booking_new_id(room=7)
    indexes = [person_index(BUYER), date_index(7)]
    keys = claim_keys("C", booking_id) + indexes + [pace_of(BUYER) for _ in pace_keys]
    args = claim_args({}, booking_id, limit, window)
    before = snapshot(one_server)
    assert fcall(one_server, "booking_claim", keys, args) == ["invalid", "call"]
    assert snapshot(one_server) == before


@pytest.mark.parametrize("function", ["booking_claim", "booking_hold"])
def test_a_day_the_request_was_read_for_that_is_no_longer_bookable_is_refused_last_by_the_function(
    r: redis.Redis, function: str
) -> None:
    """Python reads a request once; at the call the function checks the day-ahead rule itself
    (`first_day`: the request was read before midnight, the call runs after)."""
    booking_id = booking_new_id(room=7)
    late = {"first_day": str(DEC1 + 3)}  # the request is for December 3 (DEC1 + 2)
    if function == "booking_claim":
        keys, args = claim_keys("C", booking_id), claim_args(late, booking_id)
    else:
        keys = [ROOM.holds, ROOM.audit, ROOM.hold_days, ROOM.hold_streaks, ROOM.gone,
                ROOM.closures, ROOM.edition, ROOM.waits, ROOM.inventory("C", DECEMBER)]  # fmt: skip
        args = [BUYER, "C", str(DEC1 + 2), "8", "10", "5", booking_id, to_ms(NOW), 60_000, 1000,
                "007", MONTHS, 0, 0, str(DEC1 + 3)]  # fmt: skip
    before = snapshot(r)
    assert fcall(r, function, keys, args) == ["invalid", "first_day"]
    assert snapshot(r) == before


@pytest.mark.parametrize("function", ["booking_claim", "booking_hold"])
def test_a_call_that_ran_before_midnight_sent_again_after_it_is_answered_as_done(
    r: redis.Redis, function: str
) -> None:
    """A retry carries the same id: the function recognises its own earlier success before
    it checks the day-ahead rule, so the buyer is not told "no longer bookable" of a booking
    (or hold) they have."""
    booking_id = booking_new_id(room=7)
    first: list[object]
    again: list[object]
    if function == "booking_claim":
        keys = claim_keys("C", booking_id)
        first, again = (claim_args(p, booking_id) for p in ({}, {"first_day": str(DEC1 + 3)}))
    else:
        keys = [ROOM.holds, ROOM.audit, ROOM.hold_days, ROOM.hold_streaks, ROOM.gone,
                ROOM.closures, ROOM.edition, ROOM.waits, ROOM.inventory("C", DECEMBER)]  # fmt: skip
        hold_args: list[object] = [BUYER, "C", str(DEC1 + 2), "8", "10", "5", booking_id,
                                   to_ms(NOW), 60_000, 1000, "007", MONTHS, 0, 0]  # fmt: skip
        first, again = [*hold_args, "0"], [*hold_args, DEC1 + 3]
    done = fcall(r, function, keys, first)
    assert done[0] == "ok"
    after = snapshot(r)
    repeated = fcall(r, function, keys, again)
    assert repeated[0] == "ok"
    if function == "booking_claim":  # the record (read back, in the store's field order)
        assert flat_to_dict(repeated[1]) == flat_to_dict(done[1])
    else:  # the hold's end
        assert repeated == done
    assert snapshot(r) == after


def test_a_hand_built_request_is_a_programming_error_and_writes_nothing(r: redis.Redis) -> None:
    good = request("C", hour_start=8, hour_end=10, boxes="5")
    bad = type(good)("C", 7, good.dates, (8, 10), ())
    before = snapshot(r)
    with pytest.raises(ValueError):
        booking_hold(client=r, owner_id=BUYER, request=bad, hold_id=booking_new_id(room=7), now=NOW)
    assert snapshot(r) == before


# --- retries: the same request twice acts once and answers the same ------------------------

ON_THE_DAY = dt.datetime(2026, 12, 3, 9, 0, tzinfo=SHANGHAI)
ATTEMPT = "kiosk-attempt-0001"


def audit_kinds(r: redis.Redis) -> list[str]:
    return [entry.kind for entry in audit.audit_entries(client=r)]


def test_a_repeated_pickup_tells_the_person_who_collected_that_it_opened(r: redis.Redis) -> None:
    booking = claim(r, request("A")).booking
    assert booking is not None
    code = booking.pickup_code()
    first = booking_pickup(client=r, room=7, code=code, now=ON_THE_DAY, attempt_id=ATTEMPT)
    again = booking_pickup(client=r, room=7, code=code, now=ON_THE_DAY, attempt_id=ATTEMPT)
    assert first.ok and again.ok and again.outcome == "collected"
    assert again.booking is not None and again.booking.collected_dates == (booking.dates[0],)
    assert audit_kinds(r).count("pickup") == 1
    other = booking_pickup(client=r, room=7, code=code, now=ON_THE_DAY)
    assert other.outcome == "already_collected"


def test_a_repeated_wrong_code_is_counted_once(r: redis.Redis) -> None:
    first = booking_pickup(client=r, room=7, code="ABCDEFGHJK", now=ON_THE_DAY, attempt_id=ATTEMPT)
    again = booking_pickup(client=r, room=7, code="ABCDEFGHJK", now=ON_THE_DAY, attempt_id=ATTEMPT)
    assert first.outcome == again.outcome == "wrong_code"
    assert r.zcard(RoomKeys(7).pickup_failures("unknown")) == 1
    assert r.zcard(pickup_client_failures("unknown")) == 1
    assert first.misses == again.misses == 1


def test_one_attempt_id_cannot_hide_many_guesses(r: redis.Redis) -> None:
    outcomes = [
        booking_pickup(
            client=r, room=7, code=f"ABCDEFGH{c}K", now=ON_THE_DAY, attempt_id=ATTEMPT
        ).outcome
        for c in "23456789AB"
    ]
    assert outcomes == ["wrong_code"] * 10
    assert r.zcard(RoomKeys(7).pickup_failures("unknown")) == 10


def test_a_repeated_cancel_reports_cancelled_and_others_already_cancelled(r: redis.Redis) -> None:
    booking = claim(r, request("A")).booking
    assert booking is not None
    results = [
        booking_cancel(
            client=r,
            booking_id=booking.id,
            actor_id=BUYER,
            actor_is_staff=False,
            now=NOW,
            request_id="cancel-request-0001",
        )
        for _ in range(2)
    ]
    assert [(res.ok, res.outcome) for res in results] == [(True, "cancelled")] * 2
    assert audit_kinds(r).count("cancel") == 1
    other = booking_cancel(
        client=r, booking_id=booking.id, actor_id=BUYER, actor_is_staff=False, now=NOW
    )
    assert other.outcome == "already_cancelled"


@pytest.mark.parametrize("bad", ["", "short", "x" * 65, "has space here!!", "{tag}:star*abcdefgh"])
def test_odd_request_ids_are_replaced_not_trusted(r: redis.Redis, bad: str) -> None:
    booking = claim(r, request("A")).booking
    assert booking is not None
    kwargs: dict[str, Any] = {
        "booking_id": booking.id,
        "actor_id": BUYER,
        "actor_is_staff": False,
        "now": NOW,
    }
    assert booking_cancel(client=r, request_id=bad, **kwargs).ok
    assert booking_cancel(client=r, request_id=bad, **kwargs).outcome == "already_cancelled"
