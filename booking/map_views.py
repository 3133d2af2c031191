"""The building map (/book/find/): every room at once for a class, day(s) and hours. A plain
GET form and links; with htmx the results refresh by themselves (a fragment every few seconds)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.access import request_person
from booking.building_map import BuildingMap
from booking.map_page import MapQuery, map_context, map_query_from, map_read, map_stamp
from strongroom.store import get_store


def _read(request: HttpRequest) -> tuple[MapQuery, BuildingMap | None]:
    person = request_person(request)
    owner = str(person.id) if person.is_authenticated else None
    query = map_query_from(request.GET)
    return query, map_read(client=get_store(), query=query, owner_id=owner)


@require_GET
def building_map(request: HttpRequest) -> HttpResponse:
    """The map page: the form, the counts, every room, the open class C room's box grid."""
    query, bmap = _read(request)
    return render(request, "booking/map.html", map_context(query=query, bmap=bmap))


@require_GET
def building_map_results(request: HttpRequest) -> HttpResponse:
    """Fragment: the map's results alone. htmx polls it with the digest of what the page shows
    (`seen`): when nothing changed the answer is an empty 204, which htmx leaves alone."""
    query, bmap = _read(request)
    if bmap is not None and request.GET.get("seen") == map_stamp(bmap):
        return HttpResponse(status=204)
    return render(request, "booking/_map_results.html", map_context(query=query, bmap=bmap))
