"""Values every template may use."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest

from strongroom.zone import zone_name


def site(request: HttpRequest) -> dict[str, object]:
    return {
        "season_start": settings.STRONGROOM_SEASON_START,
        "season_end": settings.STRONGROOM_SEASON_END,
        "room_count": settings.STRONGROOM_ROOM_COUNT,
        "site_zone": zone_name(),  # "Shanghai": times on pages say whose clock they follow
    }
