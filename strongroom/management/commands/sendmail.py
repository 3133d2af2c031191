from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from strongroom.outbox import SENDER_PERIOD_S, outbox_pending, sender_pass
from strongroom.store import get_store


class Command(BaseCommand):
    help = "Send the due mail of the outbox once (or keep doing it with --loop); list the queue."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--loop", action="store_true", help="keep sending every few seconds")
        parser.add_argument("--list", action="store_true", help="only list the queued messages")

    def handle(self, *args: Any, **options: Any) -> None:
        client = get_store()
        if options["list"]:
            for pending in outbox_pending(client=client):
                self.stdout.write(
                    f"{pending.member}  due {pending.due_ms}  attempts {pending.attempts}  "
                    f"{pending.last_error}"
                )
            return
        while True:
            report = sender_pass(client=client)
            if report.handled or not options["loop"]:
                self.stdout.write(
                    f"sent {report.sent}, failed {report.failed} (kept), dropped {report.dropped}"
                    f", dead letters {report.dead}"
                )
            if not options["loop"]:
                return
            if not (report.handled or report.more):
                time.sleep(SENDER_PERIOD_S)
