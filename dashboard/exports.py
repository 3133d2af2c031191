"""The current bookings filter as CSV and as iCalendar (RFC 5545, via the icalendar package)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import unicodedata
from collections.abc import Iterable

from django.utils import timezone
from icalendar import Calendar

from booking.domain.calendar_files import day_event
from booking.domain.records import Booking

CSV_COLUMNS = (
    "reference", "booking_id", "class", "room", "dates", "hours", "boxes", "status", "owner_id",
    "owner", "created_at", "cancelled_at", "cancel_reason",
)  # fmt: skip
_FORMULA_START = ("=", "+", "-", "@", "|", "%")
# Blanks and control characters a spreadsheet may skip before it sees a formula sign.
_SKIPPED = " \t\r\n\x0b\x0c\u3000"
# Excel reads a CSV file as UTF-8 only when it starts with a byte order mark; without it the
# Chinese names come out as mojibake.
CSV_BOM = "\ufeff"


def csv_cell(value: object) -> str:
    """A spreadsheet-safe cell: text that a spreadsheet would run as a formula gets a quote.

    The test looks past leading blanks, and folds full-width signs (U+FF1D, U+FF0B) to ASCII
    with NFKC, since some spreadsheets read them as the ASCII ones.
    """
    text = str(value)
    head = unicodedata.normalize("NFKC", text[:32]).lstrip(_SKIPPED)
    return "'" + text if head.startswith(_FORMULA_START) else text


def _hours(booking: Booking) -> str:
    return f"{booking.hours[0]:02d}:00-{booking.hours[1]:02d}:00" if booking.hours else ""


def _local(moment: dt.datetime | None) -> str:
    """A moment on the site's clock with its offset (2026-11-28T10:05:00+08:00), as the staff
    pages show times; '' for none."""
    return timezone.localtime(moment).isoformat(timespec="seconds") if moment else ""


def bookings_csv(bookings: Iterable[Booking], names: dict[int, str]) -> str:
    """One row per booking, a header first, after the byte order mark Excel needs."""
    out = io.StringIO()
    out.write(CSV_BOM)
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for b in bookings:
        owner = names.get(int(b.owner_id), "") if b.owner_id.isdigit() else ""
        writer.writerow(
            csv_cell(v)
            for v in (
                b.reference, b.id, b.cls, b.room_label,
                " ".join(d.isoformat() for d in b.dates), _hours(b),
                " ".join(str(x) for x in b.boxes), _status(b), b.owner_id, owner,
                _local(b.created_at), _local(b.cancelled_at),
                b.cancel_reason,
            )
        )  # fmt: skip
    return out.getvalue()


def bookings_ics(bookings: Iterable[Booking], names: dict[int, str], *, host: str) -> bytes:
    """One VEVENT per booked day (UID `<booking id>-<date>@host`); class A is an all-day event,
    B and C run over their hours in the site's time zone (written in UTC)."""
    calendar = Calendar()
    calendar.add("prodid", "-//Strongroom//staff dashboard//EN")
    calendar.add("version", "2.0")
    stamp = dt.datetime.now(tz=dt.UTC).replace(microsecond=0)
    for b in bookings:
        owner = names.get(int(b.owner_id), b.owner_id) if b.owner_id.isdigit() else b.owner_id
        for date in b.dates:
            event = day_event(b, date, host=host, stamp=stamp, utc=True)
            boxes = f", boxes {','.join(str(x) for x in b.boxes)}" if b.boxes else ""
            event.add("summary", f"Class {b.cls}, room {b.room_label}{boxes}")
            event.add(
                "description", f"Booking {b.reference} ({b.id}); {_status(b)}; booked by {owner}"
            )
            event.add("x-strongroom-booking", b.id)
            calendar.add_component(event)
    return calendar.to_ical()


def _status(booking: Booking) -> str:
    """The status as the exports write it: "unconfirmed" while the store has not confirmed a
    booking (booking.engine.unsure)."""
    return "unconfirmed" if booking.unsure and booking.status == "confirmed" else booking.status
