"""What the booking parser says of a value it cannot use: one message per problem, translated
when shown (not when made), and a bad value echoed by its first characters only
(`strongroom.typed.shown_value`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import formats
from django.utils.functional import lazy
from django.utils.translation import gettext_lazy as _

from booking.domain.rules import format_room, room_count
from strongroom.typed import number_refusal, shown_value

__all__ = ["LONGEST_VALUE", "MESSAGES", "refusal", "room_refusal", "shown_value"]

LONGEST_VALUE = 40  # a longer value of any field is refused unread, never cut to fit
# One message per problem, translated when shown.
MESSAGES = {
    "too_long": _("“%(value)s” is far too long for a booking (at most %(count)s characters)."),
    "too_many_slots": _(
        "This choice takes %(count)s slots; one booking or hold takes at most %(cap)s. "
        "Choose fewer days, hours or boxes."
    ),
    "no_class": _("Choose a class: A, B or C (not “%(value)s”)."),
    "class_blank": _("Choose a class: A, B or C."),
    "room_blank": _("Choose a room: 001 to %(last)s."),
    "unknown_class": _("There is no class “%(value)s”: choose A, B or C."),
    "unknown_room": _("There is no room “%(value)s”: rooms are 001 to %(last)s."),
    "room_missing": _("Room %(room)s does not exist: rooms are 001 to %(last)s."),
    "no_date": _("Choose at least one date."),
    "many_dates": _("At most %(count)s dates per booking."),
    "not_date": _("“%(value)s” is not a date (use YYYY-MM-DD)."),
    "outside_season": _("%(date)s is outside the season (%(start)s to %(end)s)."),
    "past": _("%(date)s is in the past."),
    "today": _("%(date)s is today: book at least one day ahead."),
    "no_longer": _("%(date)s can no longer be booked: book at least one day ahead."),
    "hours_picked": _("Hours run from 00:00 to 24:00, on the hour."),
    "range_picked": _("The hour range must end after it starts."),
    "not_hour": _("“%(value)s” is not an hour (use 00:00 to 24:00)."),
    "hour_of_day": _("%(value)s is not an hour of the day (00:00 to 24:00)."),
    "on_the_hour": _("Hours start on the hour (%(hour)02d:00, not %(value)s)."),
    "start_24": _("A booking cannot start at 24:00; the last hour starts at 23:00."),
    "a_hours": _("Class A is booked by the day: leave the hours empty."),
    "need_hours": _("Class %(cls)s needs an hour range (from, to)."),
    "range_empty": _(
        "The hour range %(start)02d:00 to %(end)02d:00 is empty: the end must be later."
    ),
    "range_reversed": _("The hour range %(start)02d:00 to %(end)02d:00 ends before it starts."),
    "no_boxes_class": _("Class %(cls)s has no boxes: boxes are for class C only."),
    "no_box": _("Choose at least one box (1 to 100)."),
    "many_boxes": _("At most 100 boxes per booking."),
    "unknown_box": _("There is no box “%(value)s”: boxes are 1 to 100."),
    "box_not_number": _("“%(value)s” is not a box number (1 to 100)."),
    "box_missing": _("Box %(box)s does not exist: boxes are 1 to 100."),
}


def _interpolate(key: str, params: dict[str, Any]) -> str:
    # A day reads as every page shows one, in the language of the moment it is shown.
    shown = {
        name: formats.date_format(value, "DATE_FORMAT")
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime)
        else value
        for name, value in params.items()
    }
    return str(MESSAGES[key]) % shown


_interpolate_lazy = lazy(_interpolate, str)


def refusal(key: str, **params: Any) -> Any:
    """The message `key` translated when shown (not when made), its values filled in."""
    return _interpolate_lazy(key, params) if params else MESSAGES[key]


def room_refusal(value: object) -> Any:
    """A room that is not a number of the digits 0-9 (full-width or Arabic-Indic digits, "7a"):
    the site's one message for such a number (`strongroom.typed.number_refusal`)."""
    last = format_room(room_count())
    return number_refusal(field=_("The room"), low=format_room(1), high=last, value=value)
