from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from booking.engine.maintenance import indexes_rebuild
from strongroom.store import get_store


class Command(BaseCommand):
    help = (
        "Rebuild the booking indexes (bookings by person, bookings by date) from the booking "
        "records, found through the per-room ledgers (no KEYS)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        count = indexes_rebuild(client=get_store())
        self.stdout.write(f"re-indexed {count} booking(s)")
