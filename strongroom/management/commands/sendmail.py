from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from strongroom.outbox import outbox_pending
from strongroom.outbox_sender import SENDER_PERIOD_S, sender_pass
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
        # SIGTERM or Ctrl-C: the message under way is finished and acknowledged, no other is
        # begun (cut off between the mail server's yes and the acknowledgement, it would go
        # again), then the command ends.
        stop = threading.Event()

        def on_stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        for stop_signal in (signal.SIGTERM, signal.SIGINT):
            signal.signal(stop_signal, on_stop)
        while not stop.is_set():
            report = sender_pass(client=client, stop=stop)
            if report.handled or not options["loop"]:
                self.stdout.write(
                    f"sent {report.sent}, failed {report.failed} (kept), dropped {report.dropped}"
                    f", dead letters {report.dead}"
                )
            if not options["loop"]:
                return
            if not (report.handled or report.more):
                stop.wait(SENDER_PERIOD_S)
