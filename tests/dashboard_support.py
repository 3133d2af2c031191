"""Shared helpers of the dashboard tests: a small booking world and HTML probes."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import redis

from booking.domain.records import Booking
from booking.engine.bookings import booking_get
from booking.engine.cancel import booking_cancel
from tests.booking_support import NOW, SHANGHAI, claim, request
from tests.conftest import Someone

# 07:00 on December 3 in the site's zone: "today" for the overview tests.
DEC3 = dt.datetime(2026, 12, 3, 7, 0, tzinfo=SHANGHAI)


@dataclass
class World:
    bookings: list[Booking]
    cancelled_id: str
    made_today_id: str

    def fresh(self, client: redis.Redis) -> list[Booking]:
        """The records as they are in the store now."""
        found = [booking_get(client=client, booking_id=b.id) for b in self.bookings]
        return [b for b in found if b is not None]


def world_make(client: redis.Redis, buyer: Someone, second: Someone, staff: Someone) -> World:
    """Six bookings over the three classes, one cancelled by staff, one made on December 3."""
    a, b = str(buyer.id), str(second.id)
    made = [
        claim(client, request("A", 5, (3,)), owner=a),
        claim(client, request("A", 6, (3, 4)), owner=b),
        claim(client, request("B", 7, (3,), hour_start=8, hour_end=12), owner=a),
        claim(client, request("C", 7, (3,), hour_start=9, hour_end=11, boxes="1,2,3"), owner=b),
        claim(client, request("C", 300, (10,), hour_start=0, hour_end=24, boxes="100"), owner=a),
    ]
    from booking.domain.parser import slot_request_parse
    from booking.domain.rules import booking_new_id
    from booking.engine.claims import booking_claim

    late = slot_request_parse(
        cls="B", room=8, dates=[dt.date(2026, 12, 5)], hour_start=10, hour_end=11, now=DEC3
    )
    made.append(
        booking_claim(client=client, owner_id=b, request=late,
                      booking_id=booking_new_id(room=8), now=DEC3)
    )  # fmt: skip
    assert all(result.ok for result in made)
    bookings = [result.booking for result in made if result.booking is not None]
    cancel = booking_cancel(
        client=client, booking_id=bookings[1].id, actor_id=str(staff.id), actor_is_staff=True,
        reason="double entry", now=NOW,
    )  # fmt: skip
    assert cancel.ok
    return World(bookings, bookings[1].id, bookings[-1].id)


def figure(html: str, cls: str, name: str) -> str:
    """One cell of the overview's per-class table."""
    row = re.search(rf'<tr data-class="{cls}">(.*?)</tr>', html, re.S)
    assert row, f"no row for class {cls}"
    cell = re.search(rf'<td data-figure="{name}">([^<]*)</td>', row.group(1))
    assert cell, f"no {name} for class {cls}"
    return cell.group(1).strip()


def chart_numbers(html: str, chart_id: str) -> dict[str, int]:
    """label -> value from a chart's table of numbers."""
    start = html.index(f'id="{chart_id}-title"')
    end = html.index("</figure>", start)
    rows = re.findall(r'<tr><th scope="row">([^<]*)</th><td>(\d+)</td></tr>', html[start:end])
    return {label: int(value) for label, value in rows}


def booking_links(html: str) -> set[str]:
    """Booking ids linked from a page."""
    return set(re.findall(r'href="/staff/bookings/([0-9]{3}-[a-z2-7]{26})/"', html))
