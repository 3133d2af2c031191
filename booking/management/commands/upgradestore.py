"""`manage.py upgradestore`: move a store written in the season layout to the calendar layout
(booking.engine.upgrade), with every booking, hold, wait, pickup code, statistic and index."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from booking.engine.upgrade import legacy_rooms, store_upgrade
from strongroom.store import get_store


class Command(BaseCommand):
    help = (
        "Move a store written in the season layout (inventory named by the season's first "
        "day) to the calendar layout. Run it once with the site stopped; running it again "
        "changes nothing."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--season-start",
            type=dt.date.fromisoformat,
            default=None,
            help="first day of the season the old site sold (default: read from the store)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        client = get_store()
        waiting = legacy_rooms(client=client)
        try:
            done = store_upgrade(client=client, season_start=options["season_start"])
        except ValueError as problem:
            raise CommandError(str(problem)) from problem
        self.stdout.write(
            f"store upgraded: {done.rooms} rooms of {len(waiting)} found, {done.bookings} "
            f"bookings, {done.holds} holds, {done.waits} waits moved to the calendar layout"
        )
