"""gunicorn settings shared by `manage.py serve`, the test fixture and the benchmark."""

from __future__ import annotations

from typing import Any

worker_class = "sync"
timeout = 30
graceful_timeout = 10
keepalive = 5


def post_fork(server: Any, worker: Any) -> None:
    # A client inherited across fork would share sockets between workers.
    from strongroom.store import reset_store

    reset_store()
