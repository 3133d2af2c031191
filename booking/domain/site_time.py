"""Times shown to buyers, with the site's zone named: "14:05 Shanghai time" (上海时间 14:05).

Bookings, holds and pickups run on the site's clock (settings.TIME_ZONE), which a buyer's
browser may not share; every time a buyer reads says so."""

from __future__ import annotations

import datetime as dt

from django.utils.translation import gettext as _

from booking.domain.rules import local_now
from strongroom.clock import minute_up
from strongroom.zone import zone_name


def with_zone(text: str) -> str:
    """`text` (a time or an hour range) marked as the site's time."""
    return _("%(time)s %(zone)s time") % {"time": text, "zone": zone_name()}


def clock(moment: dt.datetime) -> str:
    """An end (held until, may again from) as HH:MM on the site's clock, with the zone:
    "14:05 Shanghai time"; rounded up to the minute, never shown earlier than it is."""
    return with_zone(clock_bare(moment))


def clock_bare(moment: dt.datetime) -> str:
    """`clock` without the zone, for a place that names it once for all its times (a
    calendar's cells: a phone's cell is too narrow to repeat it)."""
    return local_now(minute_up(moment)).strftime("%H:%M")


def hour_range(start: int, end: int) -> str:
    """An hour range with the zone: "06:00-10:00 Shanghai time" (an en dash)."""
    return with_zone(f"{start:02d}:00–{end:02d}:00")
