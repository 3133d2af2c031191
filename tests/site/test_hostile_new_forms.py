"""Hostile values on today's new forms with real records behind them: the map refresh's token,
"Book it" on a priority hold, the staff desk and acting for a buyer. A clear answer, nothing
written, never a 500, nobody else's data."""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest
import redis
import time_machine
from django.test import Client

from tests.conftest import Someone
from tests.site.test_hostile_input import HOSTILE

# Every route, role and hostile value: `make test` runs it; `make check` leaves it out.
pytestmark = pytest.mark.sweep

TOKENS = [
    *HOSTILE,
    "AAAA",
    *("A" * n for n in (1203, 1204, 1205)),  # 301 tiles of 3 bytes: 1204 characters
    *(c * 1204 for c in "=+/_-.é\x00\n"),
    "A" * 1202 + "==",
    "🦄" * 301,
    base64.b64encode(b"\xff" * 903).decode(),
    base64.urlsafe_b64encode(b"\xff" * 903).decode().rstrip("="),
    "A" * 2_000_000,
]


def test_a_garbage_map_token_gets_the_whole_results(r: redis.Redis) -> None:
    from tests.booking_support import NOW

    with time_machine.travel(NOW, tick=False):
        for token in TOKENS:
            for query in ("cls=A&date=2026-12-12", "cls=C&date=2026-12-12&start=8&end=10&room=5"):
                answer = Client().get(
                    f"/book/find/parts/results/?{query}",
                    {"seen": token},
                    headers={"HX-Request": "true"},
                )
                assert answer.status_code == 200, (token[:20], answer.status_code)
                assert 'id="map-results"' in answer.content.decode(), token[:20]


SLOT_61 = {"cls": "A", "room": "61", "date": "2026-12-05"}


def pending_hold(r: redis.Redis, owner: Someone, waiter: Someone, room: int) -> str:
    """A priority hold the waiting list placed pending for `waiter` (no sender granted it)."""
    from tests.booking.web.test_priority_book_it import freed

    return freed(r, owner, waiter, [room])[room]


def test_book_it_on_someone_else_s_priority_hold_shows_nothing_and_grants_nothing(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    from booking.engine.bookings import hold_get
    from tests.booking_support import snapshot

    hold_id = pending_hold(r, buyer, second_buyer, 61)
    before = {k: v for k, v in snapshot(r).items() if "session" not in k}
    for someone in (buyer, staff):
        browser = client_for(someone)
        answer = browser.get(f"/book/confirm/{hold_id}/")
        assert answer.status_code == 404, someone
        variants = (hold_id + "x", hold_id[:-1], hold_id.upper(), hold_id + "%0A", "%20" + hold_id)
        for variant in variants:
            assert browser.get(f"/book/confirm/{variant}/").status_code in (302, 404), variant
        claim = browser.post(
            "/book/claim/",
            {"cls": "A", "room": "61", "date": "2026-12-05", "hold_id": hold_id,
             "booking_id": hold_id},
        )  # fmt: skip
        assert claim.status_code < 500
        release = browser.post("/book/hold/release/", {"hold_id": hold_id, **SLOT_61})
        assert release.status_code == 302
    assert Client().get(f"/book/confirm/{hold_id}/").status_code == 302  # to sign in
    held = hold_get(client=r, hold_id=hold_id)
    assert held is not None and held.owner_id == f"pending:{second_buyer.id}"
    after = {k: v for k, v in snapshot(r).items() if "session" not in k}
    assert after == before, "nothing written"


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_hold_ids_on_book_it_and_release_never_make_a_server_error(
    r: redis.Redis,
    value: str,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    from urllib.parse import quote

    hold_id = pending_hold(r, buyer, second_buyer, 62)
    browser = client_for(second_buyer)
    for path_value in {value, hold_id[:6] + value, value + hold_id} - {hold_id}:
        answer = browser.get(f"/book/confirm/{quote(path_value, safe='') or 'x'}/")
        assert answer.status_code in (302, 404), path_value[:40]
    for field in ("hold_id", "booking_id"):
        data = {"cls": "A", "room": "62", "date": "2026-12-05", "hold_id": hold_id,
                "booking_id": hold_id, field: value}  # fmt: skip
        assert browser.post("/book/claim/", data).status_code < 500
        assert browser.post("/book/hold/release/", data).status_code < 500


def test_today_s_forms_without_their_csrf_token_are_refused_and_write_nothing(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    from tests.booking_support import snapshot

    hold_id = pending_hold(r, buyer, second_buyer, 63)
    forms = {
        "/book/claim/": {"cls": "A", "room": "63", "date": "2026-12-05", "hold_id": hold_id,
                         "booking_id": hold_id},
        "/book/hold/release/": {"hold_id": hold_id},
        "/staff/desk/handover/": {"booking_id": hold_id, "note": "x"},
        f"/staff/people/{second_buyer.id}/book/": {"cls": "A", "room": "64",
                                                  "date": "2026-12-05"},
        "/staff/mail/dead/": {"letter": "x", "action": "retry"},
    }  # fmt: skip
    before = {k: v for k, v in snapshot(r).items() if "session" not in k}
    for someone in (second_buyer, staff):
        browser = client_for(someone)
        browser.handler.enforce_csrf_checks = True
        for path, data in forms.items():
            assert browser.post(path, data).status_code == 403, (someone, path)
    after = {k: v for k, v in snapshot(r).items() if "session" not in k}
    assert after == before, "nothing written"


STAFF_FORMS = {
    "move": {"date": "2026-12-05", "hour_start": "9", "hour_end": "11", "boxes": "4",
             "room": "8", "move_id": ""},
    "book": {"cls": "C", "room": "9", "date": "2026-12-06", "hour_start": "9", "hour_end": "10",
             "boxes": "5", "request_id": ""},
    "handover": {"booking_id": "", "note": "x", "request_id": "", "day": "", "from": "",
                 "to": ""},
}  # fmt: skip


@pytest.mark.parametrize(("form", "field"), [(f, k) for f, v in STAFF_FORMS.items() for k in v])
def test_hostile_values_on_the_staff_desk_and_acting_forms_change_nothing(
    r: redis.Redis,
    form: str,
    field: str,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    from tests.booking_support import NOW, claim, request, snapshot

    with time_machine.travel(NOW, tick=False):
        mine = claim(r, request("C", hour_start=8, hour_end=10, boxes=[3]), owner=str(buyer.id))
        assert mine.booking is not None
        path = {
            "move": f"/staff/bookings/{mine.booking.id}/move/",
            "book": f"/staff/people/{buyer.id}/book/",
            "handover": "/staff/desk/handover/",
        }[form]
        desk = client_for(staff)
        before = {k: v for k, v in snapshot(r).items() if "session" not in k}
        # Hour 0 is a real hour, an empty hour or room keeps the booking's own; any move id is
        # one.
        legit = {"0", ""} if field.startswith("hour") else {""} if field == "room" else set()
        for value in [v for v in HOSTILE if v not in legit]:
            data = {**STAFF_FORMS[form], field: value}
            if form == "handover" and field != "booking_id":
                data["booking_id"] = mine.booking.id  # a booking of another day: refused
            answer = desk.post(path, data)
            assert answer.status_code in (302, 400, 404, 409), (field, value[:40])
            many = desk.post(path, {**data, field: [value] * 50})
            assert many.status_code < 500
        after = {k: v for k, v in snapshot(r).items() if "session" not in k}
        changed = {k for k in after.keys() | before.keys() if after.get(k) != before.get(k)}
        assert changed == set() or form == "book" or field == "move_id", changed


WAIT_FORM = {"cls": "C", "room": "7", "date": "2026-12-03", "start": "8", "end": "10", "box": "3"}


@pytest.mark.parametrize("field", [*WAIT_FORM, "entry"])
def test_hostile_values_on_the_waiting_list_forms_of_a_taken_slot_change_nothing(
    r: redis.Redis,
    field: str,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    """The slot is taken, so the form is real: every value reaches the parser, joins nothing
    and leaves nobody's wait."""
    from tests.booking_support import NOW, claim, request, snapshot

    with time_machine.travel(NOW, tick=False):
        taken = claim(r, request("C", hour_start=8, hour_end=10, boxes=[3]), owner=str(buyer.id))
        assert taken.ok
        waiter = client_for(second_buyer)
        assert waiter.post("/book/wait/", WAIT_FORM).status_code == 302  # a real wait
        before = {k: v for k, v in snapshot(r).items() if "session" not in k}
        for value in [v for v in HOSTILE if v != "0" or field not in ("start", "end")]:
            data = {**WAIT_FORM, field: value}
            path = "/book/wait/leave/" if field == "entry" else "/book/wait/"
            answer = client_for(buyer).post(path, data)
            assert answer.status_code in (302, 400, 409), (field, value[:40], answer.status_code)
            assert waiter.post(path, data).status_code in (302, 400, 409)
        after = {k: v for k, v in snapshot(r).items() if "session" not in k}
        assert after == before, "nothing written"


def test_a_claim_naming_another_buyer_s_booking_id_is_refused_and_shows_nothing_of_it(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    from tests.booking_support import NOW, claim, request, snapshot

    with time_machine.travel(NOW, tick=False):
        theirs = claim(r, request("A", room=7, dates=(9,)), owner=str(buyer.id)).booking
        assert theirs is not None
        before = {k: v for k, v in snapshot(r).items() if "session" not in k}
        for dates in ("2026-12-09", "2026-12-10"):
            answer = client_for(second_buyer).post(
                "/book/claim/",
                {"cls": "A", "room": "7", "date": dates, "booking_id": theirs.id},
            )
            assert answer.status_code in (400, 409), answer.status_code
            assert theirs.reference not in answer.content.decode()
        after = {k: v for k, v in snapshot(r).items() if "session" not in k}
        assert after == before, "nothing written"
