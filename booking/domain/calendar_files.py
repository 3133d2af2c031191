"""iCalendar files for buyers: one booking ("Add to calendar") and a buyer's subscription feed.

Times are written in the site's time zone (TZID plus its VTIMEZONE), so a calendar shows the
hours the treasure is in the safe wherever the reader is. Class A is an all-day event per
booked day; B and C run over their hours. A cancelled booking stays in the feed as CANCELLED,
so subscribed calendars remove it rather than keeping a stale entry.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from email.utils import parseaddr
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, ngettext
from icalendar import Calendar, Event

from booking.domain.records import Booking
from booking.domain.rules import site_zone

PRODID = "-//Strongroom//bookings//EN"


def _calendar(name: str) -> Calendar:
    calendar = Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    calendar.add("calscale", "GREGORIAN")
    calendar.add("x-wr-calname", name)
    calendar.add("x-wr-timezone", str(site_zone()))
    return calendar


def day_event(
    booking: Booking, date: dt.date, *, host: str, stamp: dt.datetime, utc: bool = False
) -> Event:
    """The event of one booked day, without its words: the UID `<booking id>-<date>@host`, the
    times (all day for class A; the booked hours in the site's zone, or in UTC with `utc`) and
    the status (a cancelled booking stays, CANCELLED, so calendars remove it)."""
    event = Event()
    uid = f"{booking.uid_id or booking.id}-{event_uid_date(booking, date).isoformat()}@{host}"
    event.add("uid", uid)
    event.add("dtstamp", stamp)
    if booking.hours is None:
        event.add("dtstart", date)
        event.add("dtend", date + dt.timedelta(days=1))
    else:
        midnight = dt.datetime.combine(date, dt.time(), tzinfo=site_zone())
        start, end = (midnight + dt.timedelta(hours=hour) for hour in booking.hours)
        event.add("dtstart", start.astimezone(dt.UTC) if utc else start)
        event.add("dtend", end.astimezone(dt.UTC) if utc else end)
    # RFC 5545: TENTATIVE while the store has not confirmed the booking (booking.engine.unsure).
    status = "TENTATIVE" if booking.unsure else "CONFIRMED"
    event.add("status", "CANCELLED" if booking.status == "cancelled" else status)
    return event


def event_uid_date(booking: Booking, date: dt.date) -> dt.date:
    """The date a booked day's event UID names: the day first booked in its place, so a moved
    booking's events keep their UIDs (and calendars update them; see `event_sequence`)."""
    if booking.uid_dates and date in booking.dates and len(booking.uid_dates) == len(booking.dates):
        return booking.uid_dates[booking.dates.index(date)]
    return date


def event_sequence(booking: Booking) -> int:
    """The events' SEQUENCE: one more for each move, and one more again once cancelled."""
    return booking.seq + (1 if booking.status == "cancelled" else 0)


def uid_host() -> str:
    """The host part of a buyer's events' UIDs: the site's configured address
    (STRONGROOM_SITE_URL), whichever address a file was fetched from, so that the download, the
    subscription and the mail's attachment name the same event the same way (a calendar app
    then updates it instead of adding a copy)."""
    return urlsplit(settings.STRONGROOM_SITE_URL).hostname or "localhost"


def _events(booking: Booking, *, url: str) -> list[Event]:
    host = uid_host()
    stamp = booking.created_at.astimezone(dt.UTC).replace(microsecond=0)
    reference = booking.reference
    where = gettext("Strongroom, room %(room)s") % {"room": booking.room_label}
    what = gettext("Treasure class %(cls)s, room %(room)s") % {
        "cls": booking.cls,
        "room": booking.room_label,
    }
    if booking.boxes:
        boxes = ngettext("box %(boxes)s", "boxes %(boxes)s", len(booking.boxes))
        what += " · " + boxes % {"boxes": booking.boxes_label}
    events = []
    for date in booking.dates:
        event = day_event(booking, date, host=host, stamp=stamp)
        event.add("summary", what)
        event.add("location", where)
        event.add(
            "description",
            gettext("Booking %(reference)s. Open the safe with your pickup code; details: %(url)s")
            % {"reference": reference, "url": url},
        )
        event.add("url", url)
        event.add("sequence", event_sequence(booking))
        events.append(event)
    return events


def booking_ics(
    booking: Booking,
    *,
    url: str,
    language: str = "en",
    method: str | None = None,
    attendee: str = "",
) -> bytes:
    """One booking as an .ics file (an event per booked day). With `method` (REQUEST in a
    receipt or a move, CANCEL in a cancellation: iTIP, which calendar apps act on when the
    file comes by mail), the file says so and names the site as each event's organizer and
    the buyer (`attendee`, their address) as its attendee, as iTIP asks; with no attendee to
    name, a method becomes PUBLISH (a plain copy of the event, no organizer)."""
    if method is not None and not attendee:
        method = "PUBLISH"
    scheduled = method is not None and method != "PUBLISH"
    with translation.override(language):
        calendar = _calendar(
            gettext("Strongroom booking %(reference)s") % {"reference": booking.reference}
        )
        if method is not None:
            calendar.add("method", method)
        for event in _events(booking, url=url):
            if scheduled:
                event.add("organizer", f"mailto:{parseaddr(settings.DEFAULT_FROM_EMAIL)[1]}")
                event.add(
                    "attendee",
                    f"mailto:{attendee}",
                    parameters={"ROLE": "REQ-PARTICIPANT", "PARTSTAT": "ACCEPTED"},
                )
            calendar.add_component(event)
    calendar.add_missing_timezones()
    return calendar.to_ical()


def bookings_feed(
    bookings: Iterable[tuple[Booking, str]], *, name: str, language: str = "en"
) -> bytes:
    """A buyer's bookings (each with its page URL) as one subscribable calendar."""
    with translation.override(language):
        calendar = _calendar(name)
        for booking, url in bookings:
            for event in _events(booking, url=url):
                calendar.add_component(event)
    calendar.add_missing_timezones()
    return calendar.to_ical()
