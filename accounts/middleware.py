"""`request.user` from the session, and the visit records of every page view.

A signed-in page view reads the session, then the person, then writes its visit record. The
person is read fresh on every request (revoking staff or changing a password takes effect at
once), so it cannot be cached; instead, when the request may be a page view, the visit record
rides in the same pipeline as the person read: 2 round trips instead of 3. Whether the response
really is a page view is known only at the end; when it is not (an error, a redirect, a
download), the view is taken back (`visits.visit_withdraw`, one round trip on those requests).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable

import redis
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.functional import SimpleLazyObject

from accounts import visits
from accounts.clients import client_address
from accounts.people import ANONYMOUS, AnonymousPerson, Person
from accounts.selectors import person_with_password_parse, person_with_password_queue
from accounts.sessions import session_person_id, session_person_settle
from strongroom.middleware import REFRESH_HEADER
from strongroom.store import StoreUnavailable, get_store

logger = logging.getLogger(__name__)

_STORE_ERRORS = (redis.RedisError, StoreUnavailable, OSError)
# Set on the request when its visit was recorded with the person read: the day it counted on.
_VISIT_DAY = "_strongroom_visit_day"


def _may_be_page_view(request: HttpRequest) -> bool:
    """What can be known before the view runs (method and path)."""
    if request.method not in ("GET", "HEAD"):
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
    """The signed-in person, read with the visit record when that can share the round trip."""
    person_id = session_person_id(request.session)
    if person_id is None:
        return ANONYMOUS
    client = get_store()
    pipe = client.pipeline(transaction=False)
    person_with_password_queue(pipe, person_id=person_id)
    # Only when the visit records live in the same store (visits_client may point elsewhere).
    day = None
    if _may_be_page_view(request) and visits.visits_client() is client:
        day = timezone.localdate()
        visits.visit_queue(pipe, day=day, visitor=_visitor(request, day))
    replies = pipe.execute(raise_on_error=False)
    if isinstance(replies[0], Exception):
        raise replies[0]
    if day is not None:
        failed = [reply for reply in replies[1:] if isinstance(reply, Exception)]
        if failed:
            logger.warning("visit not recorded: %s", failed[0])
        # Recorded, or failed: either way the end of the request must not write it again.
        setattr(request, _VISIT_DAY, None if failed else day)
    found = person_with_password_parse(person_id=person_id, reply=replies[0])
    return session_person_settle(request.session, found=found)


class PersonMiddleware:
    """Sets `request.user` to the signed-in Person or AnonymousPerson, read lazily."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.user = SimpleLazyObject(lambda: _person_of(request))  # type: ignore[assignment]
        return self.get_response(request)


class VisitMiddleware:
    """Counts page views and unique visitors per day; a store error never fails the page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        counts = _counts_as_page_view(request, response)
        if hasattr(request, _VISIT_DAY):
            recorded_on = getattr(request, _VISIT_DAY)
            if recorded_on is not None and not counts:
                self.withdraw(recorded_on)
        elif counts:
            self.record(request)
        return response

    def record(self, request: HttpRequest) -> None:
        try:
            day = timezone.localdate()
            visits.visit_record(
                client=visits.visits_client(), day=day, visitor=_visitor(request, day)
            )
        except _STORE_ERRORS:
            logger.warning("visit not recorded: the store did not answer", exc_info=True)

    def withdraw(self, day: dt.date) -> None:
        try:
            visits.visit_withdraw(client=visits.visits_client(), day=day)
        except _STORE_ERRORS:
            logger.warning("page view not withdrawn: the store did not answer", exc_info=True)
