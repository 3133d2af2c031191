"""Taken slots in words, with the site's time: what a refused choice shows (sold or held runs,
and the slots a claim or hold found taken)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from itertools import groupby

from django.utils import formats
from django.utils.translation import gettext as _

from booking.domain.records import Slot
from booking.domain.site_time import clock, hour_range
from booking.slots.choice_check import Blocked
from strongroom.templatetags.punctuation import listed


def blocked_described(blocked: Sequence[Blocked]) -> list[str]:
    """Each closed, sold or held run of chosen slots in words, with the site's time:
    '2 December 2026 · 08:00-10:00 Shanghai time · box 5: sold out'."""
    lines = []
    for slot in blocked:
        parts = [formats.date_format(slot.date, "DATE_FORMAT")]
        if slot.hours:
            parts.append(hour_range(*slot.hours))
        if slot.box:
            parts.append(_("box %(box)s") % {"box": slot.box})
        what = " · ".join(parts)
        if slot.closed:
            line = _("%(slot)s: closed (%(reason)s)") % {"slot": what, "reason": slot.closed}
        elif slot.closed is not None:
            line = _("%(slot)s: closed") % {"slot": what}
        elif slot.held_until is not None:
            until = clock(slot.held_until)
            line = _("%(slot)s: held by another buyer until %(time)s") % {
                "slot": what,
                "time": until,
            }
        else:
            line = _("%(slot)s: sold out") % {"slot": what}
        lines.append(line)
    return lines


def slots_described(slots: tuple[Slot, ...] | list[Slot]) -> list[str]:
    """Taken slots in words, consecutive hours merged: '8 December 2026 · 08:00-12:00 · box 5'."""
    lines: list[str] = []

    def key(slot: Slot) -> tuple[dt.date, int, bool]:
        return (slot.date, slot.box or 0, slot.held)

    for (date, box, held), group in groupby(sorted(slots, key=key), key=key):
        hours = sorted(s.hour for s in group if s.hour is not None)
        parts = [formats.date_format(date, "DATE_FORMAT")]
        runs: list[list[int]] = []
        for hour in hours:
            if runs and runs[-1][1] == hour:
                runs[-1][1] = hour + 1
            else:
                runs.append([hour, hour + 1])
        if runs:
            parts.append(listed(f"{a:02d}:00–{b:02d}:00" for a, b in runs))
        if box:
            parts.append(_("box %(box)s") % {"box": box})
        line = " · ".join(parts)
        if held:
            line = _("%(slot)s (held by another buyer for a few minutes)") % {"slot": line}
        lines.append(line)
    return lines
