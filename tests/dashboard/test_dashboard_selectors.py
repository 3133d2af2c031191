"""The selectors the dashboard added to its neighbours (booking.day_inventory,
booking.booking_audit, accounts.person_names) and its own chart and map helpers."""

from __future__ import annotations

import datetime as dt

import pytest
import redis

from accounts.selectors import person_names
from booking.domain.rules import hold_new_id
from booking.engine.audit import booking_audit
from booking.engine.cancel import booking_cancel
from booking.engine.holds import booking_hold
from booking.slots.bitmap import day_inventory
from dashboard.charts import bar_chart
from dashboard.occupancy import floors, hours_booked, occupancy_map
from dashboard.season import season_name
from strongroom.store import primaries, round_trips
from tests.booking_support import NOW, claim, request
from tests.conftest import Someone


def test_day_inventory_reads_every_room_of_a_day_in_one_round_trip(r: redis.Redis) -> None:
    claim(r, request("B", 7, (3,), hour_start=8, hour_end=12))
    claim(r, request("C", 300, (3,), hour_start=0, hour_end=1, boxes="1,100"))
    claim(r, request("A", 1, (3, 4)))
    with round_trips() as trips:
        b = day_inventory(client=r, cls="B", date=dt.date(2026, 12, 3))
    assert trips.count == len(primaries(r))  # every room: one round trip per primary
    assert len(b.rooms) == 300
    assert [h for h in range(24) if b.rooms[7][0] & (1 << (23 - h))] == [8, 9, 10, 11]
    assert all(masks == (0,) for room, masks in b.rooms.items() if room != 7)
    c = day_inventory(client=r, cls="C", date=dt.date(2026, 12, 3))
    assert len(c.rooms[300]) == 100
    assert c.rooms[300][0] == c.rooms[300][99] == 1 << 23 and sum(c.rooms[300][1:99]) == 0
    a = day_inventory(client=r, cls="A", date=dt.date(2026, 12, 4))
    assert a.rooms[1] == (1,) and sum(m[0] for m in a.rooms.values()) == 1
    # Any day can be read (the bitmaps are by calendar month): one outside the season is empty.
    assert (
        sum(m[0] for m in day_inventory(client=r, cls="A", date=dt.date(2027, 1, 1)).rooms.values())
        == 0
    )
    with pytest.raises(ValueError):
        day_inventory(client=r, cls="D", date=dt.date(2026, 12, 4))


def test_day_inventory_keeps_held_slots_apart_from_booked_ones(r: redis.Redis) -> None:
    claim(r, request("C", 9, (3,), hour_start=8, hour_end=9, boxes="2"))
    wanted = request("C", 9, (3,), hour_start=9, hour_end=11, boxes="2,3")
    made = booking_hold(
        client=r, owner_id="202", request=wanted, hold_id=hold_new_id(room=9), now=NOW
    )
    assert made.ok and made.hold is not None
    c = day_inventory(client=r, cls="C", date=dt.date(2026, 12, 3), now=NOW)
    booked, held = (sum(1 << (23 - h) for h in span) for span in ((8,), (9, 10)))
    assert c.rooms[9][1] == booked and c.held[9][1] == c.held[9][2] == held
    assert set(c.held) == {9} and c.held[9][3] == 0
    assert c.until(9, 3, [9]) == made.hold.expires_at
    assert c.until(9, 2, [8]) is None  # booked, not held
    later = made.hold.expires_at + dt.timedelta(seconds=1)
    assert day_inventory(client=r, cls="C", date=dt.date(2026, 12, 3), now=later).held == {}


def test_booking_audit_lists_one_bookings_entries_newest_first(r: redis.Redis) -> None:
    mine = claim(r, request("A", 7, (3,)))
    claim(r, request("A", 7, (4,)))
    assert mine.booking is not None
    booking_cancel(
        client=r, booking_id=mine.booking.id, actor_id="900", actor_is_staff=True, reason="why"
    )
    entries = booking_audit(client=r, booking_id=mine.booking.id)
    assert [e.kind for e in entries] == ["cancel", "claim"]
    assert entries[0].actor == "900" and entries[0].detail == "why"
    assert booking_audit(client=r, booking_id="{room:007}:*") == []


def test_person_names_reads_many_names_in_one_round_trip(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    with round_trips() as trips:
        names = person_names(client=r, person_ids=[buyer.id, second_buyer.id, 4242, buyer.id])
    assert trips.count == 1
    assert names == {buyer.id: buyer.username, second_buyer.id: second_buyer.username}
    assert person_names(client=r, person_ids=[]) == {}


def test_bar_chart_scales_bars_to_a_round_axis() -> None:
    chart = bar_chart(
        chart_id="c", title="t", value_label="v", points=[("a", 0), ("b", 35), ("c", 50)]
    )
    assert chart.ticks[-1].value == 50 and chart.total == 85
    zero, mid, top = chart.bars
    assert zero.height == 0
    assert top.height == pytest.approx(chart.plot_bottom - chart.plot_top)
    assert mid.height == pytest.approx(top.height * 35 / 50, abs=0.02)
    assert zero.x < mid.x < top.x
    empty = bar_chart(chart_id="e", title="t", value_label="v", points=[])
    assert empty.bars == () and empty.total == 0


def test_floors_and_hour_masks() -> None:
    all_floors = floors()
    assert len(all_floors) == 12 and all_floors[0].label == "001–025"
    assert sum(len(f.rooms) for f in all_floors) == 300
    assert hours_booked(0b1111 << (23 - 11), range(24)) == 4
    assert hours_booked(0b1111 << (23 - 11), [8, 12]) == 1


def test_occupancy_map_summary_counts_match_the_detail(r: redis.Redis) -> None:
    claim(r, request("B", 7, (3,), hour_start=8, hour_end=12))
    claim(r, request("B", 9, (3,), hour_start=9, hour_end=10))
    heat = occupancy_map(client=r, cls="B", date=dt.date(2026, 12, 3), floor=1)
    first = heat.summary[0]
    assert [c.booked for c in first.cells[8:12]] == [1, 2, 1, 1]
    assert first.booked == sum(row.booked for row in heat.detail) == 5
    assert heat.floor is not None and len(heat.detail) == 25


def test_the_season_is_named_by_its_month() -> None:
    assert season_name() == "2026-12"


@pytest.mark.parametrize("peak", [*range(0, 60), 99, 100, 101, 150, 199, 201, 480, 999, 12_345])
def test_every_chart_tick_sits_at_the_value_it_shows(peak: int) -> None:
    chart = bar_chart(chart_id="c", title="t", value_label="v", points=[("a", peak)])
    span = chart.plot_bottom - chart.plot_top
    axis_top = chart.ticks[-1].value
    assert axis_top >= peak and 2 <= len(chart.ticks) <= 6
    assert chart.ticks[0].value == 0
    for tick in chart.ticks:
        shown_at = (chart.plot_bottom - tick.y) / span * axis_top
        assert shown_at == pytest.approx(tick.value, abs=0.01)
    (bar,) = chart.bars
    assert bar.height / span * axis_top == pytest.approx(peak, rel=1e-3, abs=0.01)


def test_a_staff_kind_filter_finds_entries_older_than_the_newest_page(r: redis.Redis) -> None:
    from dashboard.selectors import audit_log
    from strongroom.audit import staff_audit_record

    staff_audit_record(client=r, kind="staff_grant", actor_id="1", subject="2", detail="bo")
    for n in range(60):
        staff_audit_record(client=r, kind="staff_revoke", actor_id="1", subject=str(n + 3))
    grants = audit_log(client=r, kind="staff_grant", count=50)
    assert [(e.kind, e.subject) for e in grants] == [("staff_grant", "2")]
    assert len(audit_log(client=r, kind="staff_revoke", count=50)) == 50


def test_a_chart_that_ends_today_labels_its_last_bar() -> None:
    """The page views chart of 14 days labelled every other day from the first: today's bar,
    the one staff look for, had no date under it."""
    days = [(f"11-{d:02d}", d) for d in range(15, 29)]
    ending = bar_chart(chart_id="v", title="t", value_label="v", points=days, last_labelled=True)
    assert [b.label for b in ending.bars if b.show_label][-1] == "11-28"
    assert sum(b.show_label for b in ending.bars) == 7
    starting = bar_chart(chart_id="v", title="t", value_label="v", points=days)
    assert next(b.label for b in starting.bars if b.show_label) == "11-15"
    assert not starting.bars[-1].show_label
