"""A request while the store is stalled (SIGSTOP: not dead, silent) asks it for the session once:
the answer to the outage does not wait out the store's timeout a second time."""

from __future__ import annotations

import io
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from django.test import Client

from strongroom import embedded
from strongroom.sessions import SessionStore
from tests.conftest import ON_CLUSTER, Someone
from tests.site.test_log_redaction import site_log  # noqa: F401 (a fixture)


def account_page_while_stopped(pid: int, client: Client) -> Any:
    """The account page, asked while the store's process is stopped (SIGSTOP)."""
    os.kill(pid, signal.SIGSTOP)
    try:
        return client.get("/accounts/me/")
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.mark.skipif(ON_CLUSTER, reason="stalls the one server of the single-server store")
def test_a_stalled_store_is_asked_for_the_session_once_per_request_and_logged_in_one_line(
    store_dir: Path,
    r: redis.Redis,
    buyer: Someone,
    client_for: Callable[[Someone], Client],
    monkeypatch: pytest.MonkeyPatch,
    site_log: io.StringIO,  # noqa: F811 (the fixture imported above)
) -> None:
    """The outage is raised in a middleware (the session read ahead), where Django logs the
    handled answer with the error's traceback: each request of an outage wrote two chained."""
    pid = embedded.server_pid(store_dir)
    assert pid is not None
    asked: list[str] = []
    read = SessionStore._load

    def counted(self: SessionStore, session_key: str) -> dict[str, Any]:
        asked.append(session_key)
        return read(self, session_key)

    monkeypatch.setattr(SessionStore, "_load", counted)
    client = client_for(buyer)
    client.raise_request_exception = False
    assert client.get("/accounts/me/").status_code == 200
    asked.clear()
    assert account_page_while_stopped(pid, client).status_code == 503
    assert len(asked) == 1, asked
    text = site_log.getvalue()
    assert "Service Unavailable: /accounts/me/ (TimeoutError)" in text, text
    assert "Traceback" not in text, text
    assert client.get("/accounts/me/").status_code == 200  # the next request asks again
