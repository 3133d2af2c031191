"""`{% link "app:name" value as variable %}`: `{% url "app:name" value %}` for a route whose one
argument is a plain path segment (`<str:...>`), without walking the URL resolver for each link
of a list: the route's text around its argument is found once per name and script prefix."""

from __future__ import annotations

import functools
from urllib.parse import quote

from django import template
from django.urls import get_script_prefix, reverse
from django.utils.http import RFC3986_SUBDELIMS

register = template.Library()

_PROBE = "0link0probe0"
# What `reverse` leaves unquoted in a path (django.urls.resolvers).
_SAFE = RFC3986_SUBDELIMS + "/~:@"


@functools.lru_cache(maxsize=64)
def _around(name: str, prefix: str) -> tuple[str, str] | None:
    before, found, after = reverse(name, args=[_PROBE]).partition(_PROBE)
    return (before, after) if found and _PROBE not in after else None


def link(name: str, value: object) -> str:
    """`reverse(name, args=[value])` for a route whose one argument is a `str` segment."""
    text = str(value)
    around = _around(name, get_script_prefix())
    if around is None or not text or "/" in text:
        return reverse(name, args=[value])  # Django decides (and refuses what does not match)
    return around[0] + quote(text, safe=_SAFE) + around[1]


register.simple_tag(link, name="link")
