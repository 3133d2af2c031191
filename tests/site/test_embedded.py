"""The embedded Valkey: one server per data directory, shared, restarted, persistent; and the
site's 503 page while the store is away."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import redis

from strongroom import embedded
from tests.conftest import ROOT, serve_site, site_env

SHOW_SERVER = (
    "import sys; from pathlib import Path; from strongroom import embedded; import redis; "
    "url = embedded.ensure_running(Path(sys.argv[1])); "
    "print(redis.Redis.from_url(url).info('server')['run_id'])"
)


def get(url: str, cookie: str = "") -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def wait_for(check: Callable[[], object], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


def test_two_processes_share_one_embedded_server(tmp_path: Path) -> None:
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", SHOW_SERVER, str(tmp_path)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    run_ids = {starter.communicate(timeout=30)[0].strip() for starter in starters}
    try:
        assert len(run_ids) == 1, run_ids
        assert embedded.server_pid(tmp_path) is not None
    finally:
        embedded.stop(tmp_path)


def test_the_server_keeps_its_data_across_a_restart(tmp_path: Path) -> None:
    client = redis.Redis.from_url(embedded.ensure_running(tmp_path))
    client.set("sr:{t}:kept", "yes")
    client.execute_command("WAITAOF", 1, 0, 1000)
    client.close()
    assert embedded.stop(tmp_path)
    assert not embedded.answers(tmp_path)
    client = redis.Redis.from_url(embedded.ensure_running(tmp_path))
    try:
        assert client.get("sr:{t}:kept") == b"yes"
        assert client.config_get("appendonly") == {b"appendonly": b"yes"} or client.config_get(
            "appendonly"
        ) == {"appendonly": "yes"}
        assert (tmp_path / "valkey.log").stat().st_size > 0
    finally:
        client.close()
        embedded.stop(tmp_path)


def test_a_killed_embedded_server_is_restarted_by_the_site(tmp_path: Path) -> None:
    env = site_env("", tmp_path)
    env.pop("REDIS_URL")
    site, base = serve_site(env, workers=1)
    try:
        assert wait_for(lambda: get(base + "/healthz")[0] == 200)
        first_pid = embedded.server_pid(tmp_path)
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)
        assert wait_for(lambda: not embedded.answers(tmp_path), timeout=5)
        assert wait_for(lambda: get(base + "/healthz")[0] == 200)
        assert embedded.server_pid(tmp_path) not in (None, first_pid)
    finally:
        site.terminate()
        site.wait(timeout=10)
        embedded.stop(tmp_path)


def test_pages_say_503_while_the_store_is_away_and_recover_by_themselves(tmp_path: Path) -> None:
    # The "external" store is an embedded server the site does not manage (REDIS_URL is set).
    store_dir = tmp_path / "external"
    url = embedded.ensure_running(store_dir)
    site, base = serve_site(site_env(url, tmp_path / "site"), workers=1)
    cookie = "sessionid=abcdefghijklmnopqrstuvwxyz012345"
    try:
        assert get(base + "/", cookie)[0] == 200
        embedded.stop(store_dir)
        status, body = get(base + "/", cookie)
        assert status == 503
        assert "briefly unavailable" in body
        assert "Traceback" not in body
        assert get(base + "/healthz")[0] == 503
        embedded.ensure_running(store_dir)
        assert wait_for(lambda: get(base + "/", cookie)[0] == 200)
        assert get(base + "/healthz")[0] == 200
    finally:
        site.terminate()
        site.wait(timeout=10)
        embedded.stop(store_dir)
