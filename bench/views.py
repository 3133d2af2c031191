"""Reference views for the site benchmark: Django's own floor, measured in the same run.

They are routed only when `STRONGROOM_BENCH_VIEWS=1` (off by default; see bench/root_urls.py),
and neither touches the store: one returns a short text, the other renders the site's base
template (anonymous, no session cookie, so no session or person is read).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def hello(request: HttpRequest) -> HttpResponse:
    """A bare Django view: a short text."""
    return HttpResponse("hello\n", content_type="text/plain; charset=utf-8")


def base_template(request: HttpRequest) -> HttpResponse:
    """The site's base template with nothing in it: no store access."""
    return render(request, "base.html")
