"""The building map (/book/find/): every room at once for a class, day(s) and hours. A plain
GET form and links; with htmx the results refresh by themselves (a fragment every few seconds)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.access import request_person
from booking.map_page import map_context, map_query_from
from strongroom.store import get_store


def _context(request: HttpRequest) -> dict[str, object]:
    person = request_person(request)
    owner = str(person.id) if person.is_authenticated else None
    query = map_query_from(request.GET)
    return map_context(client=get_store(), query=query, owner_id=owner)


@require_GET
def building_map(request: HttpRequest) -> HttpResponse:
    """The map page: the form, the counts, every room, the open class C room's box grid."""
    return render(request, "booking/map.html", _context(request))


@require_GET
def building_map_results(request: HttpRequest) -> HttpResponse:
    """Fragment: the map's results alone (htmx polls it to stay current)."""
    return render(request, "booking/_map_results.html", _context(request))
