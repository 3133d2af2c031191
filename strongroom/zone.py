"""The site's time zone as buyers read it: "Shanghai" (上海). Every time the site shows is on
this clock (settings.TIME_ZONE), which a visitor's browser may not share."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import pgettext


def zone_name() -> str:
    """The zone's city, translated when known ("Shanghai", 上海); else the zone's last part."""
    city = settings.TIME_ZONE.rsplit("/", 1)[-1].replace("_", " ")
    known = {"Shanghai": pgettext("time zone city", "Shanghai"), "UTC": "UTC"}
    return known.get(city, city)
