"""`request.user` from the session, and the visit records of every page view.

A signed-in request reads its session and its person in one round trip (the session key names
the person: `strongroom.sessions`). The person is read fresh on every request (revoking staff or
changing a password takes effect at once), so it is not cached. A page view (GET/HEAD, 2xx,
HTML, not an htmx fragment) is counted in the worker's memory once its response is known:
`accounts.visits` writes the counts off the request path, once a second.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.functional import SimpleLazyObject

from accounts import visits
from accounts.clients import client_address
from accounts.people import ANONYMOUS, AnonymousPerson, Person
from accounts.selectors import person_with_password, person_with_password_parse
from accounts.sessions import session_person_id, session_person_settle
from strongroom.middleware import REFRESH_HEADER, is_fragment
from strongroom.store import get_store


def _may_be_page_view(request: HttpRequest) -> bool:
    """What can be known before the view runs (method and path)."""
    if request.method != "GET":  # a HEAD is a link checker's or a monitor's probe
        return False
    if request.path.startswith(("/static/", "/healthz", "/bench/")):
        return False
    # A part of an open page refreshing itself (hx-headers on the polled element) is not a view.
    if request.headers.get(REFRESH_HEADER):
        return False
    # Pages end in "/"; a name with a suffix is a file (export.csv, favicon.ico, robots.txt).
    return "." not in request.path.rsplit("/", 1)[-1]


def _counts_as_page_view(request: HttpRequest, response: HttpResponse) -> bool:
    if not _may_be_page_view(request) or not 200 <= response.status_code < 300:
        return False
    if is_fragment(request):
        return False
    return response.get("Content-Type", "").startswith("text/html")


def _visitor(request: HttpRequest, day: dt.date) -> str:
    return visits.visitor_id(
        person_id=session_person_id(request.session),
        session_key=request.session.session_key,
        ip=client_address(request),
        user_agent=request.META.get("HTTP_USER_AGENT", "")[:500],
        day=day,
    )


def _person_of(request: HttpRequest) -> Person | AnonymousPerson:
    """The signed-in person: read with the session when its key names them (one round trip),
    else on its own (a session made before keys named their person)."""
    person_id = session_person_id(request.session)
    if person_id is None:
        return ANONYMOUS
    read = getattr(request.session, "person_read", None)
    if read is not None and read[0] == person_id:
        found = person_with_password_parse(person_id=person_id, reply=read[1])
    else:
        found = person_with_password(client=get_store(), person_id=person_id)
    return session_person_settle(request.session, found=found)


class PersonMiddleware:
    """Sets `request.user` to the signed-in Person or AnonymousPerson, read lazily."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.user = SimpleLazyObject(lambda: _person_of(request))  # type: ignore[assignment]
        return self.get_response(request)


class VisitMiddleware:
    """Counts page views and unique visitors per day, in memory (no store round trip)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if _counts_as_page_view(request, response):
            day = timezone.localdate()
            visits.visit_count(day=day, visitor=_visitor(request, day))
        return response
