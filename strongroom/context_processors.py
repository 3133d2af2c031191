"""Values every template may use."""

from __future__ import annotations

from collections.abc import Callable
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
# The request attribute holding the view's word on where its form is made (form_page_name).
_FORM_PAGE = "strongroom_form_page"


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


def form_page_name(request: HttpRequest, page: Callable[[HttpRequest], str]) -> None:
    """Say where the form a POST answers is made (`page(request)`, a local address the view
    builds from what was sent: the booking page of the choice), for `page_address`."""
    setattr(request, _FORM_PAGE, page)


def _local_page(address: str) -> str:
    """`address` if it is a page of this site that takes a GET (shortened), else ''."""
    parts = urlsplit(address)
    if parts.scheme or parts.netloc or not parts.path.startswith("/") or "\\" in address:
        return ""
    return _shortened(parts.path, parts.query) if takes_get(parts.path) else ""


def _carries_token(request: HttpRequest) -> bool:
    """Whether the request's address holds a secret (a reset or confirmation link's token):
    not one to copy into a form."""
    match = getattr(request, "resolver_match", None)
    return match is None or "token" in match.kwargs


def page_address(request: HttpRequest) -> str:
    """The page to come back to (after switching language, or signing in again): this page;
    after a form was sent, the page the form was on (its Referer, of this site); without one
    (a browser or a proxy that sends none), the page the answer stands for: the one its view
    names (the booking page of a refused choice), else its own address if that takes a GET
    (the kiosk, the move page; without the query, which no page of the site puts on a form's
    address), else the home page. Never an address that only takes POSTs (coming back would
    be a 405, or send the form again)."""
    if request.method in ("GET", "HEAD"):
        return back_address(request) or "/"
    page = ""
    came_from = urlsplit(request.headers.get("Referer", ""))
    if (
        came_from.netloc
        and came_from.netloc == request.get_host()
        and came_from.path
        and takes_get(came_from.path)
    ):
        page = _shortened(came_from.path, came_from.query)
    named = getattr(request, _FORM_PAGE, None)
    if not page and named is not None:
        page = _local_page(named(request))
    if not page and takes_get(request.path) and not _carries_token(request):
        page = _shortened(escape_uri_path(request.path), "")
    return page or "/"


def site(request: HttpRequest) -> dict[str, object]:
    return {
        "language_next": page_address(request),
        "room_count": settings.STRONGROOM_ROOM_COUNT,
        "site_zone": zone_name(),  # "Shanghai": times on pages say whose clock they follow
    }
