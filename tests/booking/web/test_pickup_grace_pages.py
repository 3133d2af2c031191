"""The pickup grace after midnight, through HTTP: a class B/C booking whose last hour ends at
24:00 may be collected until the grace after it, on the next day. Until then its owner's pages
show it as due, with its code, and the desk of its day counts it still to come and hands it
over; once the grace is over, it is over, not collected."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.codes import code_display
from booking.domain.records import Booking
from booking.engine import audit
from booking.engine.bookings import booking_get
from booking.engine.pickup import booking_pickup
from tests.booking_support import SHANGHAI, claim, request
from tests.conftest import Someone

# Just after the midnight that ends December 3: the 15-minute grace after 24:00 still runs.
IN_THE_GRACE = dt.datetime(2026, 12, 4, 0, 5, tzinfo=SHANGHAI)
AFTER_THE_GRACE = dt.datetime(2026, 12, 4, 0, 15, tzinfo=SHANGHAI)


@pytest.fixture
def late(r: redis.Redis, buyer: Someone) -> list[Booking]:
    """Class B room 100, 23:00-24:00, and class C room 101 box 9, 22:00-24:00, December 3."""
    made = [
        claim(r, request("B", room=100, hour_start=23, hour_end=24), owner=str(buyer.id)),
        claim(
            r,
            request("C", room=101, hour_start=22, hour_end=24, boxes=[9]),
            owner=str(buyer.id),
        ),
    ]
    assert all(m.ok and m.booking for m in made)
    return [m.booking for m in made if m.booking is not None]


def html(response: object) -> str:
    return response.content.decode()  # type: ignore[attr-defined]


def _section(page: str, heading: str) -> str:
    """The part of My bookings under `heading` (to the next heading or the end)."""
    start = page.find(f"<h2>{heading}</h2>")
    if start < 0:
        return ""
    rest = page[start + 1 :]
    end = rest.find("<h2>")
    return rest if end < 0 else rest[:end]


def test_my_bookings_show_them_upcoming_with_their_codes_while_the_grace_runs(
    late: list[Booking], buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(buyer)
    with time_machine.travel(IN_THE_GRACE, tick=False):
        page = html(client.get("/book/mine/"))
        upcoming = _section(page, "Upcoming")
        for booking in late:
            assert booking.reference in upcoming
            assert code_display(booking.pickup_code()) in upcoming
        assert "Not collected" not in page and "Earlier and cancelled" not in page
    with time_machine.travel(AFTER_THE_GRACE, tick=False):
        page = html(client.get("/book/mine/"))
        earlier = _section(page, "Earlier and cancelled")
        assert all(b.reference in earlier for b in late)
        assert earlier.count("Not collected") == 2
        assert all(code_display(b.pickup_code()) not in page for b in late)


def test_the_done_page_shows_the_code_while_the_grace_runs(
    late: list[Booking], buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(buyer)
    for booking in late:
        with time_machine.travel(IN_THE_GRACE, tick=False):
            page = html(client.get(f"/book/done/{booking.id}/"))
            assert code_display(booking.pickup_code()) in page
            assert "Its days are over and it was not collected." not in page
        with time_machine.travel(AFTER_THE_GRACE, tick=False):
            page = html(client.get(f"/book/done/{booking.id}/"))
            assert code_display(booking.pickup_code()) not in page
            assert "Its days are over and it was not collected." in page


def test_the_kiosk_opens_in_the_grace(r: redis.Redis, late: list[Booking]) -> None:
    """What the pages now follow: the code opens the safe at 00:05, not at 00:15."""
    opened = booking_pickup(client=r, room=100, code=late[0].pickup_code(), now=IN_THE_GRACE)
    assert opened.ok
    shut = booking_pickup(client=r, room=101, code=late[1].pickup_code(), now=AFTER_THE_GRACE)
    assert not shut.ok and shut.outcome == "wrong_day"


def test_the_desk_of_the_day_counts_them_still_to_come_and_hands_them_over_in_the_grace(
    r: redis.Redis, late: list[Booking], staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:  # fmt: skip
    client = client_for(staff)
    with time_machine.travel(IN_THE_GRACE, tick=False):
        page = html(client.get("/staff/desk/", {"day": "2026-12-03"}))
        assert "<strong>2</strong> due" in page and "<strong>2</strong> still to come" in page
        assert "never collected" not in page and page.count(">Hand over</button>") == 2
        data = {"booking_id": late[0].id, "note": "passport checked",
                "request_id": "desk-grace-request-01", "day": "2026-12-03"}  # fmt: skip
        answer = client.post("/staff/desk/handover/", data)
        assert answer.status_code == 302 and answer["Location"] == "/staff/desk/?day=2026-12-03"
        after = html(client.get(answer["Location"]))
        assert "Handed over within its pickup grace after midnight" in after
        assert "<strong>1</strong> collected" in after
        handed = booking_get(client=r, booking_id=late[0].id)
        assert handed is not None and handed.status == "collected"
        assert handed.collected_dates == (dt.date(2026, 12, 3),)
        # The same form sent again is recognised as the same hand-over: nothing more written.
        again = html(client.post("/staff/desk/handover/", data, follow=True))
        assert "Handed over" in again
        kinds = [e.kind for e in audit.booking_audit(client=r, booking_id=late[0].id)]
        assert kinds.count("handover") == 1
    with time_machine.travel(AFTER_THE_GRACE, tick=False):
        page = html(client.get("/staff/desk/", {"day": "2026-12-03"}))
        assert "<strong>1</strong> never collected" in page and "Hand over</button>" not in page
        data = {"booking_id": late[1].id, "request_id": "desk-grace-request-02",
                "day": "2026-12-03"}  # fmt: skip
        refused = html(client.post("/staff/desk/handover/", data, follow=True))
        assert "This booking is not due now: only today&#x27;s pickups, and yesterday" in refused
        kept = booking_get(client=r, booking_id=late[1].id)
        assert kept is not None and kept.status == "confirmed" and not kept.collected_dates


def test_a_forged_hand_over_day_is_refused_not_a_500(
    r: redis.Redis, late: list[Booking], staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:  # fmt: skip
    client = client_for(staff)
    with time_machine.travel(IN_THE_GRACE, tick=False):
        for day in ("2026-12-02", "2026-13-45", "x" * 40, "2026-12-03T00"):
            data = {"booking_id": late[1].id, "request_id": "desk-grace-forged1", "day": day}
            answer = client.post("/staff/desk/handover/", data)
            assert answer.status_code == 302
        kept = booking_get(client=r, booking_id=late[1].id)
        assert kept is not None and kept.status == "confirmed" and not kept.collected_dates


def test_the_desk_s_answers_in_the_grace_speak_chinese(
    late: list[Booking], staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    client.cookies["django_language"] = "zh-hans"
    with time_machine.travel(IN_THE_GRACE, tick=False):
        data = {"booking_id": late[0].id, "request_id": "desk-grace-request-zh",
                "day": "2026-12-03"}  # fmt: skip
        page = html(client.post("/staff/desk/handover/", data, follow=True))
        assert "已在午夜后的取件宽限时间内人工交付" in page
    with time_machine.travel(AFTER_THE_GRACE, tick=False):
        data = {"booking_id": late[1].id, "request_id": "desk-grace-request-z2",
                "day": "2026-12-03"}  # fmt: skip
        page = html(client.post("/staff/desk/handover/", data, follow=True))
        assert "此预订现在不可取件" in page


def test_the_account_page_lists_them_as_upcoming_while_the_grace_runs(
    late: list[Booking], buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(buyer)
    with time_machine.travel(IN_THE_GRACE, tick=False):
        page = html(client.get("/accounts/me/"))
        assert all(f"/book/done/{b.id}/" in page for b in late)
    with time_machine.travel(AFTER_THE_GRACE, tick=False):
        page = html(client.get("/accounts/me/"))
        assert not any(f"/book/done/{b.id}/" in page for b in late)
