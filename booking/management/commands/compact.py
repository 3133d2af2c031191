"""`manage.py compact`: drop what past days no longer need (booking.engine.compaction)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from booking.engine.compaction import past_compact
from strongroom.store import get_store


class Command(BaseCommand):
    help = (
        "Drop the inventory bitmaps of months whose pickups are over, and booking records, "
        "audit entries and statistics older than STRONGROOM_RETENTION_DAYS."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        done = past_compact(client=get_store())
        self.stdout.write(
            f"compacted: {done.bitmaps} month bitmaps, {done.bookings} bookings older than "
            f"{settings.STRONGROOM_RETENTION_DAYS} days, {done.stats_fields} stats fields"
        )
