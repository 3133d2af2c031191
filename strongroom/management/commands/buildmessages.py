from __future__ import annotations

from pathlib import Path
from typing import Any

import polib
from django.apps import apps
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Compile every app's locale/*/LC_MESSAGES/*.po into .mo (no GNU gettext needed)."

    def handle(self, *args: Any, **options: Any) -> None:
        built = 0
        for app in apps.get_app_configs():
            for po_path in Path(app.path).glob("locale/*/LC_MESSAGES/*.po"):
                mo_path = po_path.with_suffix(".mo")
                if mo_path.exists() and mo_path.stat().st_mtime >= po_path.stat().st_mtime:
                    continue
                catalog = polib.pofile(str(po_path))
                catalog.save_as_mofile(str(mo_path))
                built += 1
        self.stdout.write(f"compiled {built} message catalog(s)")
