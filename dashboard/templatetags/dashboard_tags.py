"""Small template helpers of the dashboard."""

from __future__ import annotations

import datetime as dt

from django import template

from booking.domain.rules import format_room
from booking.domain.site_time import clock
from booking.selectors import Closure
from dashboard.forms import closure_days_text

register = template.Library()


@register.filter
def name_of(names: dict[int, str], person_id: object) -> str:
    """The username of a person id (given as text or int), or ''."""
    text = str(person_id)
    if not (text.isascii() and text.isdigit()):
        return ""
    return names.get(int(text), "")


@register.filter
def room_label(room: int | None) -> str:
    """A room number as shown everywhere (booking's format_room: 007); '' for none."""
    return format_room(room) if isinstance(room, int) else ""


@register.filter
def site_clock(moment: dt.datetime | None) -> str:
    """An end (a hold's) on the site's clock with its zone, as buyers read it: "14:51 Shanghai
    time"; '' for none."""
    return clock(moment) if isinstance(moment, dt.datetime) else ""


@register.filter
def person_number(value: object) -> int | None:
    """A person id given as text (an audit entry's subject), or None when it is not one."""
    text = str(value)
    return int(text) if text.isascii() and text.isdigit() and len(text) < 19 else None


@register.filter
def closure_days(closure: Closure) -> str:
    return closure_days_text(closure)
