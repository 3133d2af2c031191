"""Punctuation in the reader's language: `{% colon %}` after a label, `{% comma %}` between
the items of a list (the full-width colon and the enumeration comma in Chinese) and `{% gap %}`
between two sentences (none after a Chinese full stop)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from django import template
from django.utils import formats
from django.utils.translation import get_language

register = template.Library()


def _chinese() -> bool:
    return (get_language() or "").lower().startswith("zh")


@register.simple_tag
def colon() -> str:
    return "\uff1a" if _chinese() else ": "  # the full-width colon


@register.simple_tag
def comma() -> str:
    return "\u3001" if _chinese() else ", "  # the enumeration comma


@register.simple_tag
def gap() -> str:
    """Between two sentences: a space, none after a Chinese full stop."""
    return "" if _chinese() else " "


@register.filter
def listed(items: object) -> str:
    """`{{ boxes|listed }}`: the items joined as a list in the reader's language."""
    if isinstance(items, str) or not hasattr(items, "__iter__"):
        return str(items)
    return comma().join(str(item) for item in items)


@register.filter
def days_listed(days: Iterable[dt.date]) -> str:
    """`{{ days|days_listed }}`: days as a list in the reader's language, a run of days as its
    first and last joined by an en dash: "December 10-December 12, December 20"."""
    runs: list[list[dt.date]] = []
    for day in sorted(days):
        if runs and day - runs[-1][1] == dt.timedelta(days=1):
            runs[-1][1] = day
        else:
            runs.append([day, day])

    def named(day: dt.date) -> str:
        return formats.date_format(day, "MONTH_DAY_FORMAT")

    return listed([named(a) if a == b else f"{named(a)}–{named(b)}" for a, b in runs])
