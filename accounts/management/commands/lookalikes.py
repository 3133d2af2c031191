"""`manage.py lookalikes`: every claimed name gets its look-alike (TR39 skeleton) entry, so a
name claimed before look-alikes were refused is protected too; `serve` runs it at start."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from accounts.services import skeletons_fill
from strongroom.store import get_store


class Command(BaseCommand):
    help = "Record the confusable skeleton of every claimed username (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        added = skeletons_fill(client=get_store())
        if added:
            self.stdout.write(f"look-alike entries added for {added} names")
