"""CSV and iCalendar exports of the bookings filter: they parse and hold exactly the filtered
bookings."""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Callable

import redis
from django.test import Client
from icalendar import Calendar

from booking.engine.cancel import booking_cancel
from dashboard.exports import csv_cell
from tests.booking_support import SHANGHAI, claim, request
from tests.conftest import Someone
from tests.dashboard_support import World


def test_csv_export_holds_exactly_the_filtered_bookings(
    r: redis.Redis,
    world: World,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    records = world.fresh(r)
    response = client_for(staff).get(
        "/staff/bookings/export.csv", {"start": "2026-12-03", "end": "2026-12-05", "cls": "B"}
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    assert response.content.startswith("\ufeff".encode())  # Excel: this file is UTF-8
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))
    expected = {
        b.id for b in records
        if b.cls == "B" and any(dt.date(2026, 12, 3) <= d <= dt.date(2026, 12, 5) for d in b.dates)
    }  # fmt: skip
    assert {row["booking_id"] for row in rows} == expected and len(rows) == len(expected) == 2
    by_id = {row["booking_id"]: row for row in rows}
    first = next(b for b in records if b.cls == "B" and b.room == 7)
    assert by_id[first.id]["room"] == "007"
    assert by_id[first.id]["hours"] == "08:00-12:00"
    assert by_id[first.id]["owner"] == buyer.username
    assert by_id[first.id]["status"] == "confirmed"
    # On the site's clock, as every staff page shows times, with its offset.
    made = dt.datetime.fromisoformat(by_id[first.id]["created_at"])
    assert made.utcoffset() == dt.timedelta(hours=8)
    assert made == first.created_at.replace(microsecond=0)


def test_csv_cells_cannot_run_as_spreadsheet_formulas(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    result = claim(r, request("A", 3, (6,)), owner="101")
    assert result.booking is not None
    booking_cancel(
        client=r, booking_id=result.booking.id, actor_id=str(staff.id), actor_is_staff=True,
        reason='=HYPERLINK("http://evil.example")',
    )  # fmt: skip
    body = client_for(staff).get("/staff/bookings/export.csv").content.decode("utf-8-sig")
    (row,) = list(csv.DictReader(io.StringIO(body)))
    assert row["cancel_reason"] == '\'=HYPERLINK("http://evil.example")'


def test_csv_cells_hiding_a_formula_behind_blanks_or_full_width_signs_are_quoted() -> None:
    for text in (" =1+1", "\t=1+1", "\n@SUM(A1)", "＝HYPERLINK(1)", "＋1", "－1", "\u3000=1", "|x"):
        assert csv_cell(text) == "'" + text, text
    for text in ("anna", "1-2", "a=b", "中文", ""):
        assert csv_cell(text) == text


def test_ics_export_parses_and_has_one_event_per_booked_day_of_the_filter(
    r: redis.Redis,
    world: World,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    records = world.fresh(r)
    response = client_for(staff).get(
        "/staff/bookings/export.ics", {"start": "2026-12-03", "end": "2026-12-04"}
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/calendar")
    calendar = Calendar.from_ical(response.content)
    events = list(calendar.walk("VEVENT"))
    window = {dt.date(2026, 12, 3), dt.date(2026, 12, 4)}
    chosen = [b for b in records if window & set(b.dates)]
    assert {str(e["X-STRONGROOM-BOOKING"]) for e in events} == {b.id for b in chosen}
    assert len(events) == sum(len(b.dates) for b in chosen)
    by_uid = {str(e["UID"]): e for e in events}
    b7 = next(b for b in chosen if b.cls == "B")
    event = by_uid[f"{b7.id}-2026-12-03@strongroom"]
    start = event.decoded("DTSTART")
    assert start == dt.datetime(2026, 12, 3, 8, tzinfo=SHANGHAI)
    assert event.decoded("DTEND") == dt.datetime(2026, 12, 3, 12, tzinfo=SHANGHAI)
    a5 = next(b for b in chosen if b.cls == "A" and b.room == 5)
    all_day = by_uid[f"{a5.id}-2026-12-03@strongroom"]
    assert all_day.decoded("DTSTART") == dt.date(2026, 12, 3)
    cancelled = by_uid[f"{world.cancelled_id}-2026-12-04@strongroom"]
    assert str(cancelled["STATUS"]) == "CANCELLED"


def test_an_export_of_a_bad_filter_is_a_400_page_not_a_file(
    staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    response = client_for(staff).get(
        "/staff/bookings/export.ics", {"start": f"{dt.date.today().year + 20}-11-01"}
    )
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")


def test_an_export_for_a_name_nobody_has_says_so_then_and_leaves_nothing_for_later(
    staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    for kind in ("csv", "ics"):
        response = client.get(f"/staff/bookings/export.{kind}", {"person": "zzz"})
        assert (
            response.status_code == 400 and "Nobody is called “zzz”." in response.content.decode()
        )
        assert "Nobody is called" not in client.get("/staff/").content.decode()
