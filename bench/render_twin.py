"""Render-only twins of the site's pages (`/bench/render/<path>`), the benchmark's third column.

Stricter than the in-memory twin (bench/twin.py): a render-only twin skips the view's own work
too, not only the store. On its first request in a worker it runs the real page once (Django's
test client, the full stack, the caller's cookies, headers and form) and keeps the template it
rendered, the context and the request it was rendered for; every later request renders that
template again from the kept context. A page that answers without a template (a redirect) is
replayed as it answered. Page row / render-only row is then the share of a page's time that is
spent rendering its template.

The capture patches the Django template backend's `render` for the capturing thread only, once
per page and worker. Routed only when STRONGROOM_BENCH_VIEWS=1 (bench/root_urls.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from django.http import HttpRequest, HttpResponse
from django.template.backends.django import Template
from django.test import Client
from django.views.decorators.csrf import csrf_exempt

from booking.domain.rules import booking_new_id

# Headers of the caller that the real page also gets (what makes it a fragment, its language).
_PASSED_HEADERS = ("HX-Request", "HX-Target", "HX-History-Restore-Request", "Accept-Language")


@dataclass
class Capture:
    """What a page answered once: its template, context and request, or its raw response."""

    status: int
    content_type: str
    template: Template | None = None
    context: dict[str, Any] | None = None
    request: HttpRequest | None = None
    location: str = ""
    body: bytes = b""

    def replay(self) -> HttpResponse:
        if self.template is not None:
            html = self.template.render(self.context, self.request)
            return HttpResponse(html, status=self.status, content_type=self.content_type)
        response = HttpResponse(self.body, status=self.status, content_type=self.content_type)
        if self.location:
            response["Location"] = self.location
        return response


_captures: dict[tuple[str, str, str, int], Capture] = {}
_capture_lock = threading.Lock()
_capturing = threading.local()
_real_render = Template.render


def _recording_render(self: Template, context: Any = None, request: Any = None) -> Any:
    """Template.render that notes the outermost render of the capturing thread."""
    if getattr(_capturing, "depth", None) is None:
        return _real_render(self, context, request)
    _capturing.depth += 1
    try:
        if _capturing.depth == 1 and request is not None and _capturing.found is None:
            _capturing.found = (self, dict(context or {}), request)
        return _real_render(self, context, request)
    finally:
        _capturing.depth -= 1


Template.render = _recording_render  # type: ignore[method-assign, assignment]


def _capture(request: HttpRequest, page: str, prefer: int) -> Capture:
    """Run the real page once as the caller would; keep what it rendered."""
    client = Client(HTTP_HOST=request.get_host(), enforce_csrf_checks=False)
    for name, value in request.COOKIES.items():
        client.cookies[name] = value
    headers = {name: request.headers[name] for name in _PASSED_HEADERS if name in request.headers}
    form = dict(parse_qsl(request.body.decode(), keep_blank_values=True))
    for attempt in range(3):
        _capturing.depth, _capturing.found = 0, None
        if attempt and "booking_id" in form:
            # The same id again would be recognised as the first claim's retry: a new id asks
            # for the same slot as another buyer would.
            room = int(form["booking_id"].split("-", 1)[0])
            form["booking_id"] = booking_new_id(room=room)
        try:
            if request.method == "POST":
                answer = client.post(page, form, headers=headers)
            else:
                answer = client.get(page, headers=headers)
        finally:
            found, _capturing.depth = _capturing.found, None
        # A contended row answers 302 to its one winner and 409 to the others: keep the
        # answer the row mostly gets (asking again for the same slot gets the refusal).
        if answer.status_code == prefer or not prefer:
            break
    capture = Capture(status=answer.status_code, content_type=answer.get("Content-Type", ""))
    if found is not None and (answer.status_code == 200 or answer.status_code >= 400):
        capture.template, capture.context, capture.request = found
    else:
        capture.location = answer.get("Location", "")
        capture.body = answer.content
    return capture


@csrf_exempt
def render_twin(request: HttpRequest, page: str) -> HttpResponse:
    """The page at `/<page>?<query>` rendered again from the context it was rendered with."""
    path = "/" + page + ("?" + request.META["QUERY_STRING"] if request.META["QUERY_STRING"] else "")
    prefer = int(request.headers.get("X-Bench-Prefer", "0") or 0)
    key = (request.method or "GET", path, request.headers.get("HX-Request", ""), prefer)
    held = _captures.get(key)
    if held is None:
        with _capture_lock:
            held = _captures.get(key) or _capture(request, path, prefer)
            _captures[key] = held
    return held.replay()
