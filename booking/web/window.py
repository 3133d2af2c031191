"""The sales window on every page: a middleware that keeps this process's copy of the stored
window fresh (one HGETALL every few seconds, not one a request), and the season's first and
last day for the templates."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from booking.domain.rules import season_bounds, site_today
from booking.engine.window import window_refresh
from strongroom.store import get_store


class SalesWindowMiddleware:
    """Reads the stored window again once this process's copy is a few seconds old."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(("/static/", "/healthz")):
            window_refresh(client=get_store())
        return self.get_response(request)


def season(request: HttpRequest) -> dict[str, object]:
    """The days on sale now, for every template (the footer, the booking page)."""
    return season_shown()


def season_shown() -> dict[str, object]:
    """The first and last day on sale, as the pages say them: a fixed window that began before
    tomorrow is said from tomorrow, the first day anyone can book."""
    start, end = season_bounds()
    tomorrow = site_today() + dt.timedelta(days=1)
    return {"season_start": max(start, tomorrow) if tomorrow <= end else start, "season_end": end}
