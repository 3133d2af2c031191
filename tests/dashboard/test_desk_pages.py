"""The pickup desk through HTTP: the day's bookings in a range of rooms, live counts, the
hand-over (staff, time and note audited; the code stops opening), bad input, zh."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.records import Booking
from booking.engine import audit
from booking.engine.bookings import booking_get
from booking.engine.pickup import booking_pickup
from tests.booking_support import SHANGHAI, claim, request
from tests.conftest import Someone

ON_THE_DAY = dt.datetime(2026, 12, 3, 9, 0, tzinfo=SHANGHAI)


@pytest.fixture
def due(r: redis.Redis, buyer: Someone, second_buyer: Someone) -> list[Booking]:
    made = [
        claim(r, request("A", room=7), owner=str(buyer.id)).booking,
        claim(
            r, request("B", room=9, hour_start=8, hour_end=12), owner=str(second_buyer.id)
        ).booking,
        claim(
            r, request("C", room=30, hour_start=8, hour_end=10, boxes=[4, 5]), owner=str(buyer.id)
        ).booking,
    ]
    assert all(made)
    return made  # type: ignore[return-value]


@pytest.fixture
def on_the_day() -> Iterator[None]:
    with time_machine.travel(ON_THE_DAY, tick=False):
        yield


def html(response: object) -> str:
    return response.content.decode()  # type: ignore[attr-defined]


def test_the_desk_lists_todays_bookings_of_the_rooms_with_counts(
    r: redis.Redis, due: list[Booking], staff: Someone, buyer: Someone,
    client_for: Callable[[Someone], Client], on_the_day: None,
) -> None:  # fmt: skip
    page = html(client_for(staff).get("/staff/desk/", {"from": "1", "to": "20"}))
    assert due[0].reference in page and due[1].reference in page
    assert due[2].reference not in page  # room 030 is outside the range
    assert buyer.username in page and "08:00–12:00" in page and "all day" in page
    assert "<strong>2</strong> due" in page and "<strong>0</strong> collected" in page
    assert 'hx-get="/staff/desk/?day=2026-12-03' in page  # the counts refresh themselves
    every = html(client_for(staff).get("/staff/desk/"))
    assert due[2].reference in every and "4, 5" in every
    assert booking_pickup(client=r, room=7, code=due[0].pickup_code(), now=ON_THE_DAY).ok
    counts = html(client_for(staff).get("/staff/desk/", {"part": "counts", "to": "20"}))
    assert "<strong>1</strong> collected" in counts and "<table" not in counts


def test_the_desk_reads_rooms_of_the_digits_0_to_9_only(
    due: list[Booking], staff: Someone, client_for: Callable[[Someone], Client], on_the_day: None
) -> None:
    """Full-width digits are no number, as on every form: refused, and every room shown."""
    wide = {"from": "\uff11", "to": "\uff12\uff10"}  # 1 to 20, typed full-width
    page = html(client_for(staff).get("/staff/desk/", wide))
    assert "Could not read “\uff11”, “\uff12\uff10”: showing the defaults instead." in page
    assert 'value="001"' in page and 'value="300"' in page and due[2].reference in page


def test_hand_over_without_the_code(
    r: redis.Redis, due: list[Booking], staff: Someone,
    client_for: Callable[[Someone], Client], on_the_day: None,
) -> None:  # fmt: skip
    client = client_for(staff)
    page = html(client.get("/staff/desk/", {"to": "20"}))
    assert 'action="/staff/desk/handover/"' in page
    data = {"booking_id": due[1].id, "note": "passport checked",
            "request_id": "desk-request-000001", "day": "2026-12-03", "to": "020"}  # fmt: skip
    answer = client.post("/staff/desk/handover/", data)
    assert answer.status_code == 302 and answer["Location"] == "/staff/desk/?day=2026-12-03&to=020"
    after = html(client.get(answer["Location"]))
    assert "Handed over" in after and "<strong>1</strong> collected" in after
    handed = booking_get(client=r, booking_id=due[1].id)
    assert handed is not None and handed.status == "collected"
    entry = audit.booking_audit(client=r, booking_id=due[1].id)[0]
    assert entry.kind == "handover" and entry.actor == str(staff.id)
    assert "passport checked" in entry.detail
    code = booking_pickup(client=r, room=9, code=due[1].pickup_code(), now=ON_THE_DAY)
    assert not code.ok and code.outcome == "already_collected"  # handed over: opens nothing
    # A second press of the same form says it is done, and does nothing more.
    assert client.post("/staff/desk/handover/", data).status_code == 302
    assert [e.kind for e in audit.booking_audit(client=r, booking_id=due[1].id)].count(
        "handover"
    ) == 1


def test_a_booking_past_its_pickup_hours_is_not_still_to_come_and_is_handed_over_late(
    r: redis.Redis, due: list[Booking], staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:  # fmt: skip
    """Room 009's hours are 08:00-12:00: the kiosk opens until 12:15 (the grace), then says
    its pickup hours ended; the desk says so too, and a hand-over then is a late one."""
    client = client_for(staff)
    within = ON_THE_DAY.replace(hour=12, minute=10)
    with time_machine.travel(within, tick=False):
        page = html(client.get("/staff/desk/", {"to": "20"}))
        assert "<strong>2</strong> still to come" in page and "past their pickup" not in page
    after_hours = ON_THE_DAY.replace(hour=12, minute=30)
    with time_machine.travel(after_hours, tick=False):
        kiosk = booking_pickup(client=r, room=9, code=due[1].pickup_code(), now=after_hours)
        page = html(client.get("/staff/desk/", {"to": "20"}))
        assert kiosk.outcome != "collected"
        assert "<strong>1</strong> still to come" in page  # room 007, class A: all day
        assert "<strong>1</strong> past their pickup hours" in page
        row = page[page.index(f'id="desk-{due[1].id}"') :].split("</tr>")[0]
        assert "pickup hours ended at 12:15" in row and "Hand over late" in row
        data = {"booking_id": due[1].id, "request_id": "desk-request-late01", "to": "020"}
        done = html(client.post("/staff/desk/handover/", data, follow=True))
        assert "Handed over late, after its pickup hours" in done


def test_a_hand_over_note_over_200_characters_is_refused_and_nothing_is_handed_over(
    r: redis.Redis, due: list[Booking], staff: Someone,
    client_for: Callable[[Someone], Client], on_the_day: None,
) -> None:  # fmt: skip
    client = client_for(staff)
    assert 'maxlength="200"' in html(client.get("/staff/desk/"))
    data = {"booking_id": due[1].id, "note": "x" * 300, "request_id": "desk-request-long01"}
    answer = client.post("/staff/desk/handover/", data, follow=True)
    assert "Not handed over: the note is longer than 200 characters." in html(answer)
    assert booking_get(client=r, booking_id=due[1].id) == due[1]
    assert "handover" not in [e.kind for e in audit.booking_audit(client=r, booking_id=due[1].id)]
    data["note"] = "y" * 200
    assert client.post("/staff/desk/handover/", data).status_code == 302
    entry = audit.booking_audit(client=r, booking_id=due[1].id)[0]
    assert entry.kind == "handover" and "y" * 200 in entry.detail


def test_other_days_are_shown_but_not_handed_over(
    r: redis.Redis, due: list[Booking], staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:  # fmt: skip
    with time_machine.travel(ON_THE_DAY - dt.timedelta(days=1), tick=False):
        page = html(client_for(staff).get("/staff/desk/", {"day": "2026-12-03"}))
        refused = client_for(staff).post("/staff/desk/handover/", {"booking_id": due[0].id})
    assert due[0].reference in page and 'action="/staff/desk/handover/"' not in page
    assert refused.status_code == 302
    assert booking_get(client=r, booking_id=due[0].id) == due[0]
    assert "<strong>3</strong> still to come" in page
    # A day gone by: what was not collected then is not to come any more.
    with time_machine.travel(ON_THE_DAY + dt.timedelta(days=1), tick=False):
        past = html(client_for(staff).get("/staff/desk/", {"day": "2026-12-03"}))
    assert "<strong>3</strong> never collected" in past and "still to come" not in past


@pytest.mark.parametrize(
    "query", [{"day": "2026-13-45"}, {"from": "abc"}, {"to": "🦄" * 50}, {"day": "x" * 5000}]
)
def test_bad_desk_input_says_so_and_shows_the_defaults(
    staff: Someone, client_for: Callable[[Someone], Client], query: dict[str, str]
) -> None:
    answer = client_for(staff).get("/staff/desk/", query)
    assert answer.status_code == 200 and "Could not read" in html(answer)


def test_buyers_and_visitors_cannot_use_the_desk(
    due: list[Booking], buyer: Someone, client_for: Callable[[Someone], Client], client: Client
) -> None:
    assert client_for(buyer).get("/staff/desk/").status_code == 403
    assert (
        client_for(buyer).post("/staff/desk/handover/", {"booking_id": due[0].id}).status_code
        == 403
    )
    assert client.get("/staff/desk/").status_code == 302


def test_the_desk_speaks_chinese(
    due: list[Booking], staff: Someone, client_for: Callable[[Someone], Client], on_the_day: None
) -> None:
    page = html(client_for(staff).get("/staff/desk/", HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert "取件台" in page and "Pickup desk" not in page and "交付" in page
