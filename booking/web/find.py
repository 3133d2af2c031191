"""The building map (/book/find/): every room at once for a class, day(s) and hours. A plain
GET form and links; with htmx the results refresh by themselves (every few seconds, only the
rooms that changed: booking.web.find_refresh).

Many buyers look at the same map: each worker keeps a map it read (and the page's context, per
language) for STRONGROOM_MAP_CACHE_MS and gives it to everyone who holds nothing on it; once it
is older, one request reads it again while the others still get the old one (strongroom/recent.py:
at most twice that old). A buyer with a hold of their own on the map gets it read afresh (their
holds count as free for them).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.translation import get_language
from django.views.decorators.http import require_safe

from accounts.access import request_person
from booking.slots.building_map import BuildingMap
from booking.web.find_page import map_context, map_read
from booking.web.find_query import MapQuery, map_query_from
from booking.web.find_refresh import map_refresh
from strongroom.compression import compressible
from strongroom.recent import Recent
from strongroom.store import get_store

RECENT_MAPS: Recent[tuple[BuildingMap | None, dict[str, Any]]] = Recent(size=64)
_CONTENT = "_map_content_html"  # the rendered page part, kept in its map's context


def _read(request: HttpRequest) -> tuple[MapQuery, BuildingMap | None, dict[str, Any]]:
    """The query, its map and the page's context: kept ones when young enough and the same
    for this buyer, else read now."""
    person = request_person(request)
    owner = str(person.id) if person.is_authenticated else None
    query = map_query_from(request.GET)
    key = (query, get_language()) if query.ready and not query.problems else None
    if key is not None:
        kept = RECENT_MAPS.get(key, max_age_ms=settings.STRONGROOM_MAP_CACHE_MS, one_renews=True)
        if kept is not None and kept[0][0] is not None and owner not in kept[0][0].holders:
            return query, *kept[0]
    bmap = map_read(client=get_store(), query=query, owner_id=owner)
    context = map_context(query=query, bmap=bmap)
    if key is not None and bmap is not None and owner not in bmap.holders:
        RECENT_MAPS.put(key, (bmap, context))
    return query, bmap, context


@compressible
@require_safe
def building_map(request: HttpRequest) -> HttpResponse:
    """The map page: the form, the counts, every room, the open class C room's box grid."""
    _query, _bmap, context = _read(request)
    # The page's own part depends on that context alone: rendered by the first request that
    # shows a kept map (per language, as maps are kept), not by every request (the form's
    # options alone were about half of a page's template time).
    content = context.get(_CONTENT)
    if content is None:
        content = context[_CONTENT] = render_to_string("booking/_map_content.html", context)
    return render(request, "booking/map.html", {**context, "map_content": content})


@compressible
@require_safe
def building_map_results(request: HttpRequest) -> HttpResponse:
    """Fragment: the map's refresh. htmx polls it with the token of what the page shows
    (`seen`, booking.web.find_refresh): the answer carries only the rooms that changed, an
    empty 204 (which htmx leaves alone) when none did, every result when the token is not this
    map's."""
    query, bmap, context = _read(request)
    answer = map_refresh(query=query, bmap=bmap, context=context, seen=request.GET.get("seen", ""))
    if answer is None:
        return HttpResponse(status=204)
    template, refreshed = answer
    return render(request, template, refreshed)
