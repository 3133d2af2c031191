from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from strongroom import embedded
from strongroom.conf import env_int
from strongroom.serving import gunicorn_command
from strongroom.store import check, durability, get_store, is_embedded


def default_workers() -> int:
    return 2 * (os.cpu_count() or 1)


class Command(BaseCommand):
    help = (
        "Start the store (embedded unless REDIS_URL is set), load demo data, and serve the site "
        "with gunicorn (runserver when DEBUG=1). Ctrl-C stops the site and the embedded store."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--bind", default=os.environ.get("BIND", "127.0.0.1:8000"))
        parser.add_argument("--no-demo", action="store_true", help="do not load demo data")
        parser.add_argument(
            "--keep-store", action="store_true", help="leave the embedded store running on exit"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        client = get_store()
        info = check(client)
        where = settings.REDIS_URL or f"embedded, data in {settings.STRONGROOM_DATA_DIR}"
        self.stdout.write(
            f"store: {info['server']} {info['version']} ({where}); durability: {durability(client)}"
        )
        call_command("buildmessages", verbosity=0)
        if not options["no_demo"]:
            call_command("loaddemo")
        if not settings.DEBUG:
            call_command("collectstatic", interactive=False, verbosity=0)
        bind = options["bind"]
        if settings.DEBUG:
            command = [sys.executable, "manage.py", "runserver", bind]
        else:
            workers = env_int("WEB_CONCURRENCY", default_workers(), minimum=1, maximum=256)
            command = gunicorn_command(bind=bind, workers=workers, access_log=True)
        self.stdout.write(f"serving at http://{bind}/ (Ctrl-C stops)")
        site = subprocess.Popen(command)
        try:
            site.wait()
        except KeyboardInterrupt:
            site.send_signal(signal.SIGINT)
            site.wait(timeout=30)
        finally:
            if is_embedded() and not options["keep_store"]:
                embedded.stop(settings.STRONGROOM_DATA_DIR)
                self.stdout.write("embedded store stopped")
