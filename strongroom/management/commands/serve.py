from __future__ import annotations

import os
import signal
import subprocess
import sys
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from strongroom import embedded
from strongroom.conf import DEFAULT_BIND, env_int, site_url_for_bind
from strongroom.durable import durability
from strongroom.firstrun import first_run_demo
from strongroom.health import check
from strongroom.serving import (
    bind_in_use,
    default_workers,
    group_stop,
    gunicorn_command,
    stopped_with_parent,
)
from strongroom.startup import StoreNotReady, startup_checks
from strongroom.static_files import static_collect
from strongroom.store import StoreUnavailable, get_store, is_embedded

# SIGTERM (systemd, Docker, `kill`) and SIGHUP (a closed terminal) stop the site like Ctrl-C.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# gunicorn drains for its graceful_timeout (strongroom/gunicorn_conf.py) before it gives up.
DRAIN_TIMEOUT_S = 30


class StopRequested(Exception):
    """A stop signal arrived: drain the site, then stop the embedded store."""


class Command(BaseCommand):
    help = (
        "Start the store (embedded unless REDIS_URL is set), load demo data on an empty "
        "embedded store's first run, and serve the site with gunicorn (runserver when DEBUG=1). "
        "Ctrl-C, SIGTERM or SIGHUP stop the site, then the embedded store."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--bind", default=os.environ.get("BIND", DEFAULT_BIND))
        parser.add_argument("--no-demo", action="store_true", help="do not load demo data")
        parser.add_argument(
            "--keep-store", action="store_true", help="leave the embedded store running on exit"
        )

    def _mail_say(self, bind: str) -> None:
        """Links in mail follow the bound address unless STRONGROOM_SITE_URL says otherwise
        (the workers inherit it); say which, and where mail goes."""
        if "STRONGROOM_SITE_URL" not in os.environ:
            os.environ["STRONGROOM_SITE_URL"] = settings.STRONGROOM_SITE_URL = site_url_for_bind(
                bind
            )
        server = settings.EMAIL_SERVER
        where = (
            f"files in {settings.STRONGROOM_MAIL_DIR}"
            if server is None
            else f"SMTP {server.host}:{server.port}"
        )
        self.stdout.write(f"mail: links to {settings.STRONGROOM_SITE_URL}; sent to {where}")

    def handle(self, *args: Any, **options: Any) -> None:
        bind = options["bind"]
        if bind_in_use(bind):
            # Before the store: stopping it on the way out would take it from that site.
            raise CommandError(
                f"{bind} is in use: a site (perhaps one left running) already serves there. "
                "Stop it, or give BIND another address."
            )
        try:
            client = get_store()
        except StoreUnavailable as away:
            where = "REDIS_URL's" if settings.REDIS_URL else "the embedded Valkey's"
            raise CommandError(
                f"{where} store does not answer ({str(away).rstrip('.')}): start it, or point "
                "REDIS_URL at one that runs, then run this again."
            ) from away
        info = check(client)
        where = settings.REDIS_URL or f"embedded, data in {settings.STRONGROOM_DATA_DIR}"
        self.stdout.write(
            f"store: {info['server']} {info['version']} ({where}); durability: {durability(client)}"
        )
        call_command("buildmessages", verbosity=0)
        call_command("lookalikes", stdout=self.stdout)  # names claimed before the check
        demo = "0" if options["no_demo"] else settings.STRONGROOM_DEMO
        self.stdout.write(
            first_run_demo(
                client=client,
                embedded=is_embedded(),
                setting=demo,
                load=lambda: call_command("loaddemo", stdout=self.stdout),
            )
        )
        # After the demo (a first run's demo data is written in the current layout).
        try:
            startup_checks(client)
        except StoreNotReady as refused:
            if is_embedded() and not options["keep_store"]:
                embedded.stop(settings.STRONGROOM_DATA_DIR)  # it would run on, serving nobody
            raise CommandError(str(refused)) from refused
        if not settings.DEBUG:
            static_collect(dict(os.environ))  # skipped when the collected files are current
        self._mail_say(bind)
        if settings.DEBUG:
            command = [sys.executable, "manage.py", "runserver", bind]
        else:
            workers = env_int("WEB_CONCURRENCY", default_workers(), minimum=1, maximum=256)
            command = gunicorn_command(bind=bind, workers=workers, access_log=True)
        self.stdout.write(f"serving at http://{bind}/ (Ctrl-C stops)", ending="\n")
        self.stdout.flush()
        stopping = False

        def on_stop_signal(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            if not stopping:  # a second signal must not interrupt the clean stop
                stopping = True
                raise StopRequested(signal.Signals(signum).name)

        for stop_signal in STOP_SIGNALS:
            signal.signal(stop_signal, on_stop_signal)
        # Its own process group: Ctrl-C reaches this command alone (which asks gunicorn for
        # its graceful stop), and whatever the site leaves behind can be found and stopped.
        # And gunicorn stops when this command dies, however (kill -9 included); with DEBUG=1
        # only runserver's reloader is told, not the child it serves from.
        site = subprocess.Popen(command, process_group=0, preexec_fn=stopped_with_parent())
        try:
            site.wait()
        except StopRequested as stop:
            self.stdout.write(f"{stop}: stopping the site")
            self.stdout.flush()
            # SIGTERM is gunicorn's graceful stop: requests under way are answered first.
            site.send_signal(signal.SIGTERM)
            try:
                site.wait(timeout=DRAIN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                site.kill()
                site.wait()
        finally:
            stopping = True
            # A master that died (kill -9) leaves its workers running for a moment: they stop
            # before the store, or one could lose a sent mail's acknowledgement (and send it
            # again after a restart) or start the embedded store again behind our back.
            group_stop(site.pid, timeout_s=DRAIN_TIMEOUT_S)
            if is_embedded() and not options["keep_store"]:
                embedded.stop(settings.STRONGROOM_DATA_DIR)
                self.stdout.write("embedded store stopped")
