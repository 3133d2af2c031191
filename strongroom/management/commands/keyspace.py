from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from strongroom.inventory import keyspace_stats
from strongroom.store import get_store


class Command(BaseCommand):
    help = "Print every declared key family with its live count and approximate memory."

    def handle(self, *args: Any, **options: Any) -> None:
        rows = [("family", "app", "type", "keys", "approx bytes", "pattern")]
        for entry in keyspace_stats(get_store()):
            family = entry.family
            rows.append(
                (
                    family.name if family else "(undeclared)",
                    family.app if family else "-",
                    family.type if family else "-",
                    str(entry.count),
                    str(entry.approx_bytes),
                    family.pattern if family else "-",
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            self.stdout.write(
                "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            )
