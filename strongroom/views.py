"""The site's own pages: home, health check, error pages."""

from __future__ import annotations

import sys

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from strongroom.durable import primaries_unfollowed
from strongroom.health import healthy
from strongroom.middleware import store_failure_response
from strongroom.store import UNAVAILABLE, StoreUnavailable, get_store, recover


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "strongroom/home.html")


@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    """The store answers PING (one round trip); a cluster is healthy only when every primary
    answers and reports `cluster_state:ok` (one round trip per primary). Under aof+replica it
    also says whether every primary can take writes: one that no replica follows (after a
    failover, until the failed node is back) refuses them, while pages still read (INFO
    replication of each primary, at most once a second per process)."""
    try:
        client = get_store()
        ok = healthy(client)
        unfollowed = primaries_unfollowed(client) if ok else 0
    except (*UNAVAILABLE, StoreUnavailable):
        ok = False
    if not ok:
        recover()
        return JsonResponse({"store": "unavailable"}, status=503)
    if unfollowed:
        return JsonResponse({"store": "ok", "writes": f"paused on {unfollowed} primaries"})
    return JsonResponse({"store": "ok", "writes": "ok"})


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: the site's own page, in the visitor's language (a body too large, too many
    fields); a foreign Host gets a plain answer, as its page could not build a link."""
    if isinstance(exception, DisallowedHost):
        return HttpResponseBadRequest("Bad Request (400)", content_type="text/plain")
    return render(request, "400.html", status=400)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a store outage raised in middleware still gets the 503 page."""
    error = sys.exc_info()[1]
    answer = store_failure_response(request, error) if error is not None else None
    return answer or render(request, "500.html", status=500)
