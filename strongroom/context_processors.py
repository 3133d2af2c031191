"""Values every template may use."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest

from strongroom.zone import zone_name


def language_next(request: HttpRequest) -> str:
    """Where switching language returns to: this page; after a form was sent (a POST answers
    at an address that takes only POSTs), the page the form was on, else the home page."""
    if request.method in ("GET", "HEAD"):
        return request.get_full_path()
    came_from = urlsplit(request.headers.get("Referer", ""))
    if came_from.netloc and came_from.netloc == request.get_host() and came_from.path:
        return came_from.path + (f"?{came_from.query}" if came_from.query else "")
    return "/"


def site(request: HttpRequest) -> dict[str, object]:
    return {
        "language_next": language_next(request),
        "room_count": settings.STRONGROOM_ROOM_COUNT,
        "site_zone": zone_name(),  # "Shanghai": times on pages say whose clock they follow
    }
