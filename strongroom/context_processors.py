"""Values every template may use."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def site(request: HttpRequest) -> dict[str, object]:
    return {
        "season_start": settings.STRONGROOM_SEASON_START,
        "season_end": settings.STRONGROOM_SEASON_END,
        "room_count": settings.STRONGROOM_ROOM_COUNT,
    }
