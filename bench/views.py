"""Reference views for the site benchmark: Django's own floor, measured in the same run.

They are routed only when `STRONGROOM_BENCH_VIEWS=1` (off by default; see bench/root_urls.py).
One returns a short text and touches nothing; the other renders the site's base template, whose
header names the person signed in: with a buyer's cookie it reads the session and the person
(one round trip), as every signed-in page does, so it is the floor of the signed-in rows.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def hello(request: HttpRequest) -> HttpResponse:
    """A bare Django view: a short text."""
    return HttpResponse("hello\n", content_type="text/plain; charset=utf-8")


def base_template(request: HttpRequest) -> HttpResponse:
    """The site's base template with nothing in it (the identity read, nothing else)."""
    return render(request, "base.html")
