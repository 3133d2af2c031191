from __future__ import annotations

import importlib
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand

from strongroom.clock import now_ms
from strongroom.keyspace import DEMO_LOADED
from strongroom.store import get_store


class Command(BaseCommand):
    help = "Load the demo data of every app that has a `demo.load_demo(client)` (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        client = get_store()
        for app in apps.get_app_configs():
            try:
                module = importlib.import_module(f"{app.name}.demo")
            except ModuleNotFoundError as exc:
                if exc.name != f"{app.name}.demo":
                    raise
                continue
            for line in module.load_demo(client):
                self.stdout.write(f"[{app.label}] {line}")
        # As a first run's load does: the store holds the demo (a later first run adds none).
        client.set(DEMO_LOADED.key(), now_ms(), nx=True)
