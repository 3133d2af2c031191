"""`request.user` from the session, and the visit records of every page view."""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.functional import SimpleLazyObject

from accounts import visits
from accounts.sessions import session_person, session_person_id
from strongroom.store import StoreUnavailable, get_store

logger = logging.getLogger(__name__)


class PersonMiddleware:
    """Sets `request.user` to the signed-in Person or AnonymousPerson, read lazily."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.user = SimpleLazyObject(  # type: ignore[assignment]
            lambda: session_person(request.session, client=get_store())
        )
        return self.get_response(request)


def _counts_as_page_view(request: HttpRequest, response: HttpResponse) -> bool:
    if request.method not in ("GET", "HEAD") or not 200 <= response.status_code < 300:
        return False
    if request.path.startswith(("/static/", "/healthz", "/bench/")):
        return False
    return response.get("Content-Type", "").startswith("text/html")


class VisitMiddleware:
    """Counts page views and unique visitors per day; a store error never fails the page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if _counts_as_page_view(request, response):
            self.record(request)
        return response

    def record(self, request: HttpRequest) -> None:
        try:
            day = timezone.localdate()
            visitor = visits.visitor_id(
                person_id=session_person_id(request.session),
                session_key=request.session.session_key,
                ip=request.META.get("REMOTE_ADDR", ""),
                user_agent=request.META.get("HTTP_USER_AGENT", "")[:500],
                day=day,
            )
            visits.visit_record(client=visits.visits_client(), day=day, visitor=visitor)
        except (redis.RedisError, StoreUnavailable, OSError):
            logger.warning("visit not recorded: the store did not answer", exc_info=True)
