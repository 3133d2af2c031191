"""The staff closures page over HTTP: staff only; a closure's bookings are listed before
anything is written; confirming closes and cancels them with the reason (the buyer's My bookings
shows it, the cancellation mail is queued); a closed slot refuses a buyer's hold with the reason;
reopening is one action. English and Chinese."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.keys import RoomKeys
from booking.engine.bookings import booking_get
from booking.engine.closures import closures_list
from strongroom.audit import staff_audit_entries
from strongroom.decoders import text_stream
from tests.booking_support import NOW, claim, request
from tests.conftest import Someone

CLOSE = {
    "rooms": "7",
    "first": "2026-12-10",
    "last": "2026-12-11",
    "hour_start": "",
    "hour_end": "",
    "reason": "safe under repair",
}


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    """The tests' own day (their closures are of days after it, whenever they run)."""
    with time_machine.travel(NOW, tick=False):
        yield


def confirm_marks(page: str) -> dict[str, str]:
    """The hidden fields step one's confirm form carries (its id and its signature)."""
    return {
        name: page.split(f'name="{name}" value="')[1].split('"')[0]
        for name in ("closure_id", "checked")
    }


def text(response: object) -> str:
    return response.content.decode()  # type: ignore[attr-defined]


def test_closures_are_staff_only(
    buyer: Someone, client_for: Callable[[Someone], Client], r: redis.Redis
) -> None:
    assert Client().get("/staff/closures/").status_code == 302
    assert client_for(buyer).get("/staff/closures/").status_code == 403
    assert client_for(buyer).post("/staff/closures/close/", CLOSE).status_code == 403
    assert closures_list(client=r) == []


def test_staff_see_the_bookings_inside_then_close_cancel_and_reopen(
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
    r: redis.Redis,
) -> None:
    booked = claim(r, request("A", room=7, dates=(10,)), owner=str(buyer.id)).booking
    assert booked is not None
    desk = client_for(staff)
    checked = desk.post("/staff/closures/check/", CLOSE)
    page = text(checked)
    assert checked.status_code == 200 and booked.reference in page
    assert 'id="closure-confirm"' in page and closures_list(client=r) == []
    summary = page.split('id="closure-summary"')[1].split("</dl>")[0]
    assert "<dd>007</dd>" in summary and "2026-12-10 – 2026-12-11, whole days" in summary
    assert "safe under repair" in summary
    done = desk.post(
        "/staff/closures/close/",
        {**CLOSE, **confirm_marks(page), "cancel_inside": "1", "booking": [booked.id]},
    )
    assert done.status_code == 302
    (closure,) = closures_list(client=r)
    gone = booking_get(client=r, booking_id=booked.id)
    assert gone is not None and gone.status == "cancelled"
    assert gone.cancel_reason == "safe under repair"
    assert any(m.startswith(f"cancel|{booked.id}") for m in queued_mail(r, 7))
    mine = text(client_for(buyer).get("/book/mine/"))
    # Isolated from the date after it: a reason with U+202E in it turned that date around.
    assert '<q class="cancel-reason"><bdi>safe under repair</bdi></q>' in mine
    # A buyer's hold of a closed slot is refused with the reason, in both languages.
    hold = {"cls": "A", "room": "7", "date": "2026-12-11"}
    shop = client_for(buyer)
    refused = shop.post("/book/hold/", hold, HTTP_ACCEPT_LANGUAGE="en")
    assert refused.status_code == 409 and "Closed: safe under repair" in text(refused)
    chinese = shop.post("/book/hold/", hold, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert chinese.status_code == 409 and "已关闭：safe under repair" in text(chinese)
    # The calendar, the pickers and the map say "closed" with the reason, not "sold out" (the
    # calendar's cell says "closed", and the reason is under the calendar, with the days).
    for language, word, cell_word, under in (
        ("en", "Closed: safe under repair", "<small>Closed</small>",
         "Closed on December 10–December 11: safe under repair"),
        ("zh-hans", "已关闭：safe under repair", "<small>不开放</small>",
         "12月10日–12月11日不开放：safe under repair"),
    ):  # fmt: skip
        calendar = text(shop.get("/book/parts/calendar/", {"cls": "A", "room": "7"},
                                 HTTP_ACCEPT_LANGUAGE=language))  # fmt: skip
        cell = calendar.split('value="2026-12-11"')[1].split("</button>")[0]
        assert cell_word in cell and "disabled" in cell and "day--closed" in cell
        assert f"<li>{under}</li>" in calendar
        assert "day--closed" not in calendar.split('value="2026-12-12"')[1].split("</button>")[0]
        found = text(shop.get("/book/find/", {"cls": "A", "date": "2026-12-11"},
                              HTTP_ACCEPT_LANGUAGE=language))  # fmt: skip
        tile = found.split('id="map-room-007"')[1].split("</li>")[0]
        assert word in tile
        assert '<li class="closed" id="map-room-007"' in found
        assert '<li class="closed" id="map-room-008"' not in found
    listed = text(desk.get("/staff/closures/", HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert "重新开放" in listed
    assert '<td class="closure-reason"><bdi>safe under repair</bdi></td>' in listed  # it wraps
    reopened = desk.post(f"/staff/closures/{closure.id}/reopen/", follow=True)
    assert closures_list(client=r) == []
    assert "Reopened: room 007, 2026-12-10 – 2026-12-11, whole days." in text(reopened)
    assert shop.post("/book/hold/", hold).status_code == 302


def test_bad_closure_input_is_refused_with_a_message_and_writes_nothing(
    staff: Someone, client_for: Callable[[Someone], Client], r: redis.Redis
) -> None:
    desk = client_for(staff)
    for bad in (
        {"rooms": "0-999"},
        {"last": "2026-12-01"},
        {"reason": "  "},
        {"hour_start": "9", "hour_end": ""},
        {"rooms": "<script>"},
        {"first": "2026-11-01", "last": "2026-11-20"},  # days over
        {"first": "2026-11-20", "last": "2026-11-22"},  # begun before today (the 21st)
    ):  # fmt: skip
        response = desk.post("/staff/closures/check/", {**CLOSE, **bad})
        assert response.status_code == 400 and "Nothing was closed." in text(response)
    empty = text(desk.post("/staff/closures/check/", {**CLOSE, "hour_start": "5", "hour_end": "5"}))
    assert "The hour range is empty: it must end after it starts." in empty
    forged = desk.post("/staff/closures/close/", {**CLOSE, "closure_id": "x:{y}"})
    assert forged.status_code == 400
    # Step two closes what step one showed, or nothing: not unsigned, not other rooms.
    marks = confirm_marks(text(desk.post("/staff/closures/check/", CLOSE)))
    for sent in ({**CLOSE, "closure_id": marks["closure_id"]},
                 {**CLOSE, **marks, "rooms": "all"}, {**CLOSE, **marks, "reason": "other"},
                 {**CLOSE, **marks, "checked": marks["checked"][:-2] + "xx"}):  # fmt: skip
        refused = desk.post("/staff/closures/close/", sent)
        assert refused.status_code == 400 and "not the closure that was checked" in text(refused)
    assert closures_list(client=r) == [] and not r.exists(RoomKeys(7).closures)
    # "Change" brings the form back with what it held, and writes nothing.
    again = text(desk.post("/staff/closures/check/", {**CLOSE, **marks, "change": "1"}))
    assert 'id="closure-form"' in again and 'value="safe under repair"' not in again
    assert "safe under repair</textarea>" in again and closures_list(client=r) == []


def queued_mail(r: redis.Redis, room: int) -> list[str]:
    """The messages waiting in the room's outbox (a stream, field m)."""
    return [fields["m"] for _id, fields in text_stream(r.xrange(RoomKeys(room).outbox))]


@pytest.mark.parametrize("cancel", [True, False])
def test_closing_deals_with_what_is_inside_then_not_what_was_listed_before(
    staff: Someone, buyer: Someone, client_for: Callable[[Someone], Client], r: redis.Redis,
    cancel: bool,
) -> None:  # fmt: skip
    """A booking made between the check (nothing inside) and the close is inside too."""
    desk = client_for(staff)
    page = text(desk.post("/staff/closures/check/", CLOSE))
    late = claim(r, request("A", room=7, dates=(10,)), owner=str(buyer.id)).booking
    assert late is not None
    sent = {**CLOSE, **confirm_marks(page), **({"cancel_inside": "1"} if cancel else {})}
    done = desk.post("/staff/closures/close/", sent, follow=True)
    status = booking_get(client=r, booking_id=late.id).status  # type: ignore[union-attr]
    if cancel:
        assert status == "cancelled" and "1 booking inside was cancelled" in text(done)
        again = desk.post("/staff/closures/close/", sent, follow=True)  # a double press
        assert again.status_code == 200 and len(closures_list(client=r)) == 1
        audited = [e for e in staff_audit_entries(client=r) if e.kind == "closure_add"]
        assert len(audited) == 1
    else:
        assert status == "confirmed" and "1 booking is inside the closure and was kept" in text(
            done
        )


def test_the_occupancy_map_marks_what_is_closed(
    staff: Someone, client_for: Callable[[Someone], Client], r: redis.Redis
) -> None:
    """Closed slots are off sale: the map hatches them (it showed them free)."""
    from booking.engine.closures import Closure, closure_add

    closure_add(client=r, actor_id=str(staff.id), closure=Closure(
        "closure-map-1", (7, 8), dt.date(2026, 12, 10), dt.date(2026, 12, 10), (8, 10), "pipes",
    ))  # fmt: skip
    desk = client_for(staff)
    whole = text(desk.get("/staff/occupancy/", {"date": "2026-12-10", "cls": "A"}))
    closed = re.findall(r'<td class="heat heat-0 heat--closed"><a [^>]*title="(\d+)', whole)
    assert closed == ["007", "008"]
    hours = text(desk.get("/staff/occupancy/", {"date": "2026-12-10", "cls": "B", "floor": "1"}))
    row = hours.split('<th scope="row">007</th>')[1].split("</tr>")[0]
    assert row.count("heat--closed") == 2 and "07:00" not in row.split("heat--closed")[0][-200:]
    assert '<th scope="row">009</th>' in hours
    assert "heat--closed" not in hours.split('<th scope="row">009</th>')[1].split("</tr>")[0]
    # Class C over the whole day: a box of room 007 is closed 2 of its 24 hours, so its cell
    # is not hatched as closed whole, and says how much is; over 08-10 it is closed whole.
    day_c = text(desk.get("/staff/occupancy/", {"date": "2026-12-10", "cls": "C", "floor": "1"}))
    row_c = day_c.split('<th scope="row">007</th>')[1].split("</tr>")[0]
    assert "heat--closed" not in row_c and 'title="007 #1: 2 slots closed"' in row_c
    part = text(desk.get("/staff/occupancy/", {"date": "2026-12-10", "cls": "C", "floor": "1",
                                               "hour_start": "8", "hour_end": "10"}))  # fmt: skip
    assert part.split('<th scope="row">007</th>')[1].split("</tr>")[0].count("heat--closed") == 100
    other_day = text(desk.get("/staff/occupancy/", {"date": "2026-12-11", "cls": "A"}))
    assert "heat-0 heat--closed" not in other_day


def test_some_hours_closed_read_partly_closed_with_the_reason_not_partly_booked(
    staff: Someone, buyer: Someone, client_for: Callable[[Someone], Client], r: redis.Redis
) -> None:
    """Hours closed on a class B day: the calendar said "Partly booked" (nobody had booked) and
    told no reason; with the closed hours chosen it says "Closed"."""
    from booking.engine.closures import Closure, closure_add

    closure_add(client=r, actor_id=str(staff.id), closure=Closure(
        "closure-hours-1", (7,), dt.date(2026, 12, 10), dt.date(2026, 12, 11), (8, 10), "pipes",
    ))  # fmt: skip
    shop = client_for(buyer)
    for query, word, line in (
        ({}, "Partly closed", "Some hours closed on December 10–December 11: pipes"),
        ({"start": "8", "end": "10"}, "Closed", "Closed on December 10–December 11: pipes"),
        (
            {"start": "12", "end": "14"},
            "Partly closed",
            "Some hours closed on December 10–December 11: pipes",
        ),
    ):
        calendar = text(shop.get("/book/parts/calendar/", {"cls": "B", "room": "7", **query}))
        cell = calendar.split('value="2026-12-10"')[1].split("</button>")[0]
        assert f"<small>{word}</small>" in cell and f"<li>{line}</li>" in calendar, cell


@pytest.mark.parametrize(("start", "end"), [("-1", "5"), ("0", "0"), ("8", "")])
def test_an_hour_refused_by_its_field_is_not_also_said_missing(
    staff: Someone, client_for: Callable[[Someone], Client], r: redis.Redis, start: str, end: str
) -> None:
    """Both hours given, one out of range: the form also said "Give both hours, or neither",
    as though one were missing. One given: that is still what it says."""
    answer = client_for(staff).post(
        "/staff/closures/check/", {**CLOSE, "hour_start": start, "hour_end": end}
    )
    page = text(answer)
    assert answer.status_code == 400 and closures_list(client=r) == []
    assert ("Give both hours, or neither" in page) is (end == "")
