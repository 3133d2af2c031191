"""The site benchmark's rows: one URL (and method/body) per page measured."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from bench.site_data import DataSet

# Buyers racing for each fresh slot in the contended row: one wins, the others are refused.
RACERS = 8

# --- rows ---------------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the table: what wrk sends and what answers count as right."""

    label: str
    path: str
    expect: tuple[int, ...] = (200,)
    method: str = "GET"
    who: str = "anonymous"  # "anonymous", "buyer" or "staff"
    body: str = ""
    slots: str = "fixed"  # POST rows: "distinct", "race" (RACERS buyers per slot) or "fixed"
    headers: dict[str, str] = field(default_factory=dict)
    reference: bool = False
    # The page's in-memory twin (bench/twin.py) and its render-only twin (bench/render_twin.py)
    # are measured right after it; `twin_of` marks a twin's own row (not printed).
    twin: Row | None = None
    render: Row | None = None
    twin_of: str = ""
    missing: str = ""  # why the row could not run (e.g. the page does not exist yet)
    alone_ms: float = 0.0  # the preflight: one request on an idle server
    result: dict[str, Any] = field(default_factory=dict)


def bookings_stored(client: Any) -> int:
    """Single-day bookings in the date index (one member per booking and day)."""
    from booking.domain.keys import date_indexes

    pipe = client.pipeline(transaction=False)
    for key in date_indexes():
        pipe.zcard(key)
    return sum(int(count) for count in pipe.execute())


def url(name: str, **kwargs: Any) -> str | None:
    from django.urls import NoReverseMatch, reverse

    try:
        return reverse(name, kwargs=kwargs or None)
    except NoReverseMatch:
        return None


def build_rows(data: DataSet) -> list[Row]:
    """The table's rows, in order; a page that does not exist yet is reported as missing."""
    # The references run first and the base template again last: on a shared machine the two
    # base-template rows show how much the conditions moved during the run (the ratio uses both).
    # The base template is signed in like the page rows: its header reads the session and the
    # person, as theirs do.
    first = [
        Row("reference: bare view, short text", "/bench/hello", reference=True),
        Row("reference: base template, signed in", "/bench/base", who="buyer", reference=True),
    ]
    last = [
        Row("reference: base template, signed in, again", "/bench/base", who="buyer",
            reference=True),
    ]  # fmt: skip
    pages = booking_rows(data) + map_rows(data) + other_rows(data)
    for row in pages:
        if not row.missing:
            row.twin = twin_of(row, "/bench/twin", "in-memory twin")
            row.render = twin_of(row, "/bench/render", "render-only twin")
    return first + pages + last


def twin_of(row: Row, prefix: str, name: str) -> Row:
    """The row's page served under `prefix` (bench/twin.py, bench/render_twin.py): same
    cookies, headers and form; the contended row's twins replay a refusal."""
    path, _, query = row.path.partition("?")
    headers = dict(row.headers)
    expect = row.expect
    if row.slots == "race":
        headers["X-Bench-Prefer"] = "409"
        expect = (409,)
    return Row(
        f"{row.label}: {name}",
        f"{prefix}{path}" + (f"?{query}" if query else ""),
        expect=expect,
        method=row.method,
        who=row.who,
        body=row.body,
        slots=row.slots,
        headers=headers,
        twin_of=row.label,
    )


def map_rows(data: DataSet) -> list[Row]:
    """The building map: a class C map of one day, all rooms (the page and its polled fragment)."""
    page, part = url("booking:find"), url("booking:find_results")
    if not (page and part):
        why = "the building map does not exist"
        return [Row(label, "", missing=why) for label in ("building map", "map fragment")]
    day = data.bookable_days[len(data.bookable_days) // 2].isoformat()
    query = f"cls=C&date={day}&start=10&end=12"
    htmx = {"HX-Request": "true"}
    return [
        Row("building map (class C, one day, 300 rooms)", f"{page}?{query}", who="buyer"),
        Row("building map fragment, polled (htmx)", f"{part}?{query}", who="buyer", headers=htmx),
    ]


def booking_rows(data: DataSet) -> list[Row]:
    """Booking page, calendar fragment, POST on distinct free slots, buyers racing for slots."""
    page, calendar, claim = url("booking:pick"), url("booking:calendar"), url("booking:claim")
    if not (page and calendar and claim):
        why = "the booking pages do not exist"
        labels = ("booking page", "calendar fragment", "booking POST, distinct free slots")
        return [Row(label, "", missing=why) for label in (*labels, "booking POST, contended")]
    from booking.web.forms import Choices

    # A buyer who has picked a class C room, day, hours and box: calendar, hours and boxes.
    day = data.bookable_days[len(data.bookable_days) // 2]
    picked = Choices(
        cls="C", room=42, dates=(day,), start=10, end=12, boxes=(7,), month=day.replace(day=1)
    )
    month = Choices(cls="C", room=42, month=day.replace(day=1))
    htmx = {"HX-Request": "true", "HX-Target": "calendar"}
    form = "csrfmiddlewaretoken={token}&cls=C&room={room}&date={date}&start={hour}&end={hour_end}"
    slot = form + "&box={box}&booking_id={room}-{uid}"
    rows = [
        Row("booking page (class C picked)", f"{page}?{picked.query()}", who="buyer"),
        Row("calendar fragment (htmx)", f"{calendar}?{month.query()}", who="buyer", headers=htmx),
        Row("booking POST, distinct free slots", claim, method="POST", who="buyer", body=slot,
            slots="distinct", expect=(302,)),
        Row(f"booking POST, {RACERS} buyers race for each fresh slot", claim, method="POST",
            who="buyer", body=slot, slots="race", expect=(302, 409)),
    ]  # fmt: skip
    return rows


def other_rows(data: DataSet) -> list[Row]:
    """Catalog with two tags, the account page and the dashboard overview."""
    rows = []
    browse = url("catalog:browse")
    tags = urllib.parse.urlencode({"all": ",".join(data.two_tags)})
    rows.append(
        Row(f"catalog, 2 tags ({' AND '.join(data.two_tags)})", f"{browse}?{tags}", who="buyer")
        if browse
        else Row("catalog, 2 tags", "", missing="catalog:browse does not exist")
    )
    account = url("accounts:profile")
    rows.append(
        Row("account page", account, who="buyer")
        if account
        else Row("account page", "", missing="accounts:profile does not exist")
    )
    overview = url("dashboard:overview")
    rows.append(
        Row("dashboard overview (staff)", overview, who="staff")
        if overview
        else Row("dashboard overview (staff)", "", missing="dashboard:overview does not exist")
    )
    return rows
