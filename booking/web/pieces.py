"""Rendered pieces: the booking page and the building map repeat the same small pieces on every
request (100 box buttons, 24 hour buttons, 48 hour options, 31 days, 300 room tiles). Each piece
is a template of its own, rendered once per language and value and remembered, so a request
joins strings instead of running the template engine hundreds of times."""

from __future__ import annotations

import functools
from collections.abc import Hashable, Iterable

from django.conf import settings
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language


@functools.lru_cache(maxsize=16384)  # both pages: cells, options, room tiles
def _piece(template: str, language: str | None, name: str, value: Hashable) -> str:
    return render_to_string(template, {name: value}).strip()


def piece(template: str, name: str, value: Hashable) -> SafeString:
    """`template` rendered with `value` as `name` (a frozen dataclass, a tuple), remembered
    per active language; with DEBUG on it is rendered each time (templates may change)."""
    render = _piece.__wrapped__ if settings.DEBUG else _piece
    return mark_safe(render(template, get_language(), name, value))  # noqa: S308 (rendered)


def pieces(template: str, name: str, values: Iterable[Hashable]) -> SafeString:
    """`piece` of every value, joined."""
    render = _piece.__wrapped__ if settings.DEBUG else _piece
    language = get_language()
    return mark_safe("".join(render(template, language, name, v) for v in values))  # noqa: S308


def hour_options(hours: range, selected: int | None) -> SafeString:
    """The <option>s of an hour select (booking/_hour_option.html), `selected` marked."""
    return pieces("booking/_hour_option.html", "option", ((h, h == selected) for h in hours))
