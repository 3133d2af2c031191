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
    """`{{ days|days_listed }}`: days as a list in the reader's language, "December 22,
    December 23" (12月22日、12月23日)."""
    return listed([formats.date_format(day, "MONTH_DAY_FORMAT") for day in days])
