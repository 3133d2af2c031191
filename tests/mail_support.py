"""A real SMTP server (aiosmtpd) for the mail tests, on a free loopback port."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

from aiosmtpd.controller import Controller


@contextlib.contextmanager
def smtp_serving(handler: Any) -> Iterator[int]:
    """Serve `handler` (an aiosmtpd handler) on a free loopback port, yielded; stopped after."""
    with socket.socket() as probe:  # a free port (the controller checks it can connect)
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port
    finally:
        controller.stop()
