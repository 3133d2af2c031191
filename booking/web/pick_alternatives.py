"""The nearest free choices to a blocked one on the booking page: the same hours in the closest
rooms, then the closest hours (or other boxes) in the same room, as links that fill in the
page (built on booking.slots.choice_check)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import redis
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from booking.domain.rules import format_room
from booking.domain.site_time import hour_range
from booking.slots.choice_check import Wanted, choice_check
from booking.web.forms import Choices
from strongroom.templatetags.punctuation import listed


@dataclass(frozen=True)
class Suggestion:
    text: str
    href: str


def alternatives_build(
    *, client: redis.Redis, choices: Choices, owner_id: str | None
) -> list[Suggestion]:
    """The nearest free choices to a blocked one, as links that fill in the booking page:
    the same hours in the closest rooms, then the closest hours (or other boxes) here."""
    if not choices.complete or choices.room is None:
        return []
    wanted = Wanted(choices.cls, choices.room, choices.dates, choices.hours, choices.boxes)
    check = choice_check(client=client, wanted=wanted, owner_id=owner_id)
    found = []
    page = reverse("booking:pick")
    for option in (*check.other_rooms, *check.other_hours):
        start, end = option.hours or (None, None)
        changed = replace(choices, room=option.room, start=start, end=end, boxes=option.boxes)
        parts = [_("Room %(room)s") % {"room": format_room(option.room)}]
        if option.hours:
            parts.append(hour_range(*option.hours))
        if option.boxes:
            boxes = listed(option.boxes)
            parts.append(
                ngettext("box %(boxes)s", "boxes %(boxes)s", len(option.boxes)) % {"boxes": boxes}
            )
        found.append(Suggestion(" · ".join(parts), f"{page}?{changed.query(month=None)}"))
    return found
