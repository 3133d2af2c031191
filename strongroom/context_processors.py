"""Values every template may use."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest
from django.utils.encoding import escape_uri_path, iri_to_uri

from strongroom.methods import takes_get
from strongroom.zone import zone_name

# The longest address a page sends its visitor back to (after logging in, after switching
# language), as the login form's hidden `next` takes it; a longer one loses its query, then
# itself. Django redirects to at most 16,384 characters and treats a `next` over 2,048 as unsafe.
BACK_MOST = 2000


def _shortened(path: str, query: str) -> str:
    """`path?query` (both percent-encoded), else the path alone, else '' when even that is
    longer than BACK_MOST."""
    for address in (f"{path}?{query}" if query else path, path):
        if len(address) <= BACK_MOST:
            return address
    return ""


def back_address(request: HttpRequest) -> str:
    """This page's address to come back to, percent-encoded (a `%3F` in the path stays one)."""
    query = iri_to_uri(request.META.get("QUERY_STRING", ""))  # as get_full_path() gives it
    return _shortened(escape_uri_path(request.path), query)


def page_address(request: HttpRequest) -> str:
    """The page to come back to (after switching language, or signing in again): this page;
    after a form was sent (a POST answers at an address that takes only POSTs), the page the
    form was on, else the home page."""
    if request.method in ("GET", "HEAD"):
        return back_address(request) or "/"
    came_from = urlsplit(request.headers.get("Referer", ""))
    if (
        came_from.netloc
        and came_from.netloc == request.get_host()
        and came_from.path
        and takes_get(came_from.path)
    ):
        return _shortened(came_from.path, came_from.query) or "/"
    return "/"


def site(request: HttpRequest) -> dict[str, object]:
    return {
        "language_next": page_address(request),
        "room_count": settings.STRONGROOM_ROOM_COUNT,
        "site_zone": zone_name(),  # "Shanghai": times on pages say whose clock they follow
    }
