"""Values every template may use."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest

from strongroom.zone import zone_name

# The longest address a page sends its visitor back to (after logging in, after switching
# language): a longer one loses its query, then itself. Django refuses to redirect to more than
# 16,384 characters; 1,000 stay below that however they are percent-encoded (12 per emoji).
BACK_MOST = 1000


def back_address(request: HttpRequest) -> str:
    """This page's address to come back to: with its query, or without one that is too long
    ('' when the path itself is)."""
    for address in (request.get_full_path(), request.path):
        if len(address) <= BACK_MOST:
            return address
    return ""


def language_next(request: HttpRequest) -> str:
    """Where switching language returns to: this page; after a form was sent (a POST answers
    at an address that takes only POSTs), the page the form was on, else the home page."""
    if request.method in ("GET", "HEAD"):
        return back_address(request) or "/"
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
