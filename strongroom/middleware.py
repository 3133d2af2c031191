"""The store guard: when the store is unreachable, a clear 503 page instead of a traceback."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any, Literal, TypeVar

from django import forms
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, StreamingHttpResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve

from strongroom.durable import NotDurable, WritesPaused
from strongroom.methods import view_methods
from strongroom.sessions import SessionStore
from strongroom.startup import StoreNotReady
from strongroom.store import UNAVAILABLE, StoreUnavailable, recover

logger = logging.getLogger(__name__)

# Never echoed back into the "press again" form: a password has no business in a page. The rule
# is by kind, not by list: a name that says it is a secret, or the name of any field that some
# form of the site shows as a password box.
_SECRET_WORDS = ("pass", "secret")


def _form_classes(base: type[forms.BaseForm]) -> Iterator[type[forms.BaseForm]]:
    for sub in base.__subclasses__():
        yield sub
        yield from _form_classes(sub)


def _password_box_names() -> frozenset[str]:
    # Walked on each outage answer (rare), not cached: a form module imported later counts too.
    return frozenset(
        name
        for form in _form_classes(forms.BaseForm)
        for name, field in getattr(form, "base_fields", {}).items()
        if isinstance(field.widget, forms.PasswordInput)
    )


def is_secret_field(name: str) -> bool:
    """Whether a posted field holds a password (or another secret) that no page may echo."""
    folded = name.casefold()
    return any(word in folded for word in _SECRET_WORDS) or name in _password_box_names()


def store_unavailable_response(request: HttpRequest) -> HttpResponse:
    """The 503 page; it renders without touching the store, and asks the client to retry."""
    recover()
    response = render(request, "503.html", status=503)
    response["Retry-After"] = "5"
    return response


# What a form does, in the words of the page offering it again when the store did not answer:
# a booking (a hold or a claim), a cancellation, a pickup at a safe; any other form is "".
FormAction = Literal["booking", "cancel", "pickup"]
_View = TypeVar("_View", bound=Callable[..., Any])


def form_action(action: FormAction) -> Callable[[_View], _View]:
    """Mark a view by what its form does (`@form_action("cancel")`), for the words of the page
    of a press the store did not answer; the view itself is returned, not wrapped."""

    def mark(view: _View) -> _View:
        view.form_action = action  # type: ignore[attr-defined]
        return view

    return mark


def form_action_of(request: HttpRequest) -> str:
    """What the form sent in `request` does ("" when its view says nothing): its view is the
    one Django resolved, or, for an error before that (in a middleware), the one of its path."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return ""
    view: Any = match.func
    while view is not None:
        action = getattr(view, "form_action", None)
        if action is not None:
            return str(action)
        view = getattr(view, "__wrapped__", None)
    return ""


def not_confirmed_response(
    request: HttpRequest, *, store_lost: bool = False, paused: bool = False
) -> HttpResponse:
    """A write whose outcome is not known: it ran but the store could not confirm it durable in
    time (no replica answered, a slow disk), or the store stopped answering while it was sent
    (`store_lost`); or known not done: the part of the store it was for had no replica to
    confirm it on (`paused`, nothing sent). The same form, to be pressed again: its client-made
    id makes that safe. Its words say what the form does (`form_action`)."""
    fields = [
        (name, value)
        for name, values in request.POST.lists()
        if not is_secret_field(name)
        for value in values
    ]
    context = {
        "fields": fields,
        "store_lost": store_lost,
        "paused": paused,
        "action": form_action_of(request),
    }
    response = render(request, "not_confirmed.html", context, status=503)
    response["Retry-After"] = "60" if paused else "5" if store_lost else "2"
    return response


def is_store_failure(error: BaseException | None) -> bool:
    """Whether `error` is one the 503 page answers: the store did not answer, could not
    confirm a write, or is not served."""
    return isinstance(error, (*UNAVAILABLE, StoreUnavailable, NotDurable, StoreNotReady))


def store_failure_response(request: HttpRequest, error: BaseException) -> HttpResponse | None:
    """The answer to a store outage (None for any other error). A form sent when the store
    stopped answering may have been done or not: it is offered again, as one the store could
    not confirm is, unless it carries a password (that form's own page asks for it again)."""
    if isinstance(error, StoreNotReady):  # a worker that started in an outage found it unfit
        logger.error("the store is not served: %s", error)
        return store_unavailable_response(request)
    if not is_store_failure(error):
        return None
    session = getattr(request, "session", None)
    if isinstance(error, UNAVAILABLE) and isinstance(session, SessionStore):
        session.unanswered(error)  # the page's header reads no session from a silent store
    if isinstance(error, WritesPaused):  # nothing was sent, and the store is there: no recover()
        if request.method == "POST":
            return not_confirmed_response(request, paused=True)
        page = render(request, "503.html", status=503)
        page["Retry-After"] = "60"
        return page
    if request.method == "POST":
        if isinstance(error, NotDurable):
            return not_confirmed_response(request)
        if not any(is_secret_field(name) for name in request.POST):
            recover()
            return not_confirmed_response(request, store_lost=True)
    return store_unavailable_response(request)


class HeadWithoutBodyMiddleware:
    """Outermost: a HEAD gets the headers a GET would (its Content-Length too) and no body (RFC
    9110). Django renders the page either way; gunicorn dropped the body itself, writing a
    warning line for each HEAD."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.method == "HEAD":
            if isinstance(response, StreamingHttpResponse):
                response.streaming_content = []
            else:
                response.content = b""
        return response


class StoreGuardMiddleware:
    """Outermost: turns store outages raised by views into the 503 page.

    Errors raised in other middleware reach `strongroom.views.server_error` instead, which
    makes the same choice.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return store_failure_response(request, exception)


# Sent by a part of an open page that refreshes itself (htmx polling, hx-headers): the request
# is not a page view, and the answer may be an empty 204 when nothing changed.
REFRESH_HEADER = "X-Strongroom-Refresh"


def is_fragment(request: HttpRequest) -> bool:
    """An htmx request swapping part of a page (a history restore asks for the whole page)."""
    restore = request.headers.get("HX-History-Restore-Request") == "true"
    return request.headers.get("HX-Request") == "true" and not restore


CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "img-src 'self' data:",
        "style-src 'self'",
        "script-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    """Every page loads only the site's own assets: no inline scripts, styles or CDNs."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response


class MethodNotAllowedPageMiddleware:
    """A 405 (a link or a language switch that GETs an address taking only forms) is the
    site's own page in the visitor's language, with a way on, not an empty body."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or response.streaming or response.content:
            return response
        page = render(request, "405.html", status=405)
        page["Allow"] = response.get("Allow", "")
        return page

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> HttpResponse | None:
        """A form method (PUT, DELETE, ...) that the view does not take is a 405 at once, not
        the CSRF check's 403: the address takes no such request, whatever its token."""
        if request.method in ("GET", "HEAD", "OPTIONS", "TRACE"):
            return None  # the view's own decorator answers these
        methods = view_methods(view)
        if methods is None or request.method in methods:
            return None
        return HttpResponseNotAllowed(sorted(methods))
