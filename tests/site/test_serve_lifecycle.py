"""`make run` as users run it: demo data on the first run only, and a stop signal to the whole
process group (systemd, Docker, a closed terminal) drains the site and stops the store.

These start the real `make run` in its own process group on a temporary data directory.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import redis

from accounts.demo import DEMO_STAFF
from accounts.selectors import person_find
from accounts.services import staff_set
from strongroom import embedded
from strongroom.firstrun import first_run_demo
from strongroom.keyspace import DEMO_LOADED, PERSON_BY_NAME
from strongroom.serving import free_port
from strongroom.store import connect
from tests.conftest import ROOT, SHARED_STATIC
from tests.store.test_store_stall import servers_on, wait_for


def answers(base: str) -> bool:
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.HTTPError):
        return False


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def make_run(
    data_dir: Path, log: Path, port: int | None = None, **extra: str
) -> tuple[subprocess.Popen[bytes], str]:
    """`make run` in a new process group (as a terminal or a service manager starts it)."""
    port = port or free_port()
    env = {**os.environ, "STRONGROOM_DATA_DIR": str(data_dir), "BIND": f"127.0.0.1:{port}"}
    env.pop("REDIS_URL", None)
    # The run's one collection of static files (tests/conftest.py): not what is tested here.
    env.update(
        {
            "WEB_CONCURRENCY": "1",
            "PYTHONUNBUFFERED": "1",
            "STRONGROOM_STATIC_DIR": str(SHARED_STATIC),
            **extra,
        }
    )
    # -o: the test's own interpreter is installed already, do not reinstall it.
    command = ["make", "-s", "-o", ".venv/.installed", "run", f"PY={sys.executable}"]
    with log.open("ab") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    if not wait_for(lambda: answers(base) or process.poll() is not None, timeout=120):
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail("make run did not answer:\n" + log.read_text(errors="replace")[-3000:])
    assert process.poll() is None, log.read_text(errors="replace")[-3000:]
    return process, base


def stop_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Send `sig` to the whole process group and wait until every member has gone."""
    os.killpg(process.pid, sig)
    process.wait(timeout=60)
    assert wait_for(lambda: not group_alive(process.pid), timeout=60)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_to_make_runs_process_group_leaves_no_store_running(
    tmp_path: Path, sig: signal.Signals
) -> None:
    log = tmp_path / "run.log"
    data = tmp_path / "data"
    process, base = make_run(data, log, STRONGROOM_DEMO="0")
    [pid] = servers_on(data)
    stop_group(process, sig)
    output = log.read_text(errors="replace")
    # Links in mail follow BIND, and the console says so, and where mail goes.
    assert f"mail: links to {base}; sent to files in {data / 'mail'}" in output, output
    assert wait_for(lambda: not servers_on(data), timeout=20), output
    assert not Path(f"/proc/{pid}").exists()
    assert "embedded store stopped" in output and "Shutting down: Master" in output, output


def test_make_run_loads_the_demo_once_and_a_revoked_demo_staff_stays_revoked(
    tmp_path: Path,
) -> None:
    log = tmp_path / "run.log"
    data = tmp_path / "data"
    try:
        process, _ = make_run(data, log)
        store = connect(embedded.url_for(data))
        assert store.get(DEMO_LOADED.key()) is not None
        curator = person_find(client=store, username=DEMO_STAFF)
        assert curator is not None and curator.is_staff
        staff_set(client=store, person_id=curator.id, is_staff=False)
        people = store.hlen(PERSON_BY_NAME.key())
        keys_before = store.dbsize()
        store.close()
        stop_group(process, signal.SIGTERM)

        process, _ = make_run(data, log)
        store = connect(embedded.url_for(data))
        curator = person_find(client=store, username=DEMO_STAFF)
        assert curator is not None and not curator.is_staff
        assert store.hlen(PERSON_BY_NAME.key()) == people
        assert store.dbsize() == keys_before  # no demo bookings or books added again
        store.close()
        stop_group(process, signal.SIGTERM)
        output = log.read_text(errors="replace")
        assert output.count("demo data: loaded (first run") == 1, output
        assert "not loaded again" in output
    finally:
        embedded.stop(data)


@pytest.mark.parametrize(
    ("is_embedded", "setting", "loads"),
    [
        (True, "auto", True),
        (False, "auto", False),  # REDIS_URL set: production, no demo accounts
        (True, "0", False),
        (False, "0", False),
        (False, "1", True),
    ],
)
def test_demo_is_loaded_only_where_asked(
    r: redis.Redis, is_embedded: bool, setting: str, loads: bool
) -> None:
    calls: list[str] = []
    line = first_run_demo(
        client=r, embedded=is_embedded, setting=setting, load=lambda: calls.append("load")
    )
    assert calls == (["load"] if loads else []), line
    assert (r.get(DEMO_LOADED.key()) is not None) is loads


def test_demo_is_not_loaded_into_a_store_that_already_holds_data(r: redis.Redis) -> None:
    r.hset(PERSON_BY_NAME.key(), "someone", 1)
    calls: list[str] = []
    line = first_run_demo(client=r, embedded=True, setting="auto", load=lambda: calls.append("x"))
    assert calls == [] and "already holds data" in line


def test_a_master_killed_with_9_leaves_no_worker_and_no_store(tmp_path: Path) -> None:
    """gunicorn's master dies (kill -9): its workers ran on for a moment after it while the
    store was stopped under them, so one could lose a sent mail's acknowledgement (the mail
    went again after the restart) or start the embedded store again, left running. They now
    stop first, then the store."""
    log = tmp_path / "run.log"
    data = tmp_path / "data"
    process, _base = make_run(data, log, STRONGROOM_DEMO="0", WEB_CONCURRENCY="2")
    started = log.read_text(errors="replace")
    master = int(re.findall(r"\[(\d+)\] \[INFO\] Starting gunicorn", started)[-1])
    workers = [int(pid) for pid in re.findall(r"Booting worker with pid: (\d+)", started)]
    assert len(workers) == 2
    os.kill(master, signal.SIGKILL)
    process.wait(timeout=90)
    output = log.read_text(errors="replace")
    assert wait_for(lambda: not servers_on(data), timeout=20), output
    assert not [pid for pid in workers if running(pid)], output
    assert "embedded store stopped" in output, output


def running(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def serve_pid(group: int) -> int:
    """The `manage.py serve` process of a `make run` process group."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
            command = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if fields[2] == str(group) and b"serve" in command and b"manage.py" in command:
            return int(stat.parent.name)
    raise AssertionError("no serve process")


def test_make_run_killed_with_9_leaves_no_site_serving_and_runs_again(tmp_path: Path) -> None:
    """kill -9 of `make` and of `manage.py serve`: gunicorn (its own process group) served on
    with nothing to stop it, and the next `make run` could not bind, then stopped the store
    that site used. gunicorn now stops with serve; the next run starts, and a run whose
    address is taken says so and touches no store."""
    log = tmp_path / "run.log"
    data = tmp_path / "data"
    process, base = make_run(data, log, STRONGROOM_DEMO="0")
    port = int(base.rsplit(":", 1)[1])
    started = log.read_text(errors="replace")
    master = int(re.findall(r"\[(\d+)\] \[INFO\] Starting gunicorn", started)[-1])
    os.kill(serve_pid(process.pid), signal.SIGKILL)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert wait_for(lambda: not running(master), timeout=40), log.read_text(errors="replace")
    assert wait_for(lambda: not answers(base), timeout=20)
    again, base_again = make_run(data, tmp_path / "again.log", port=port, STRONGROOM_DEMO="0")
    assert base_again == base and answers(base)
    # A third run on the same address and data: refused before it touches the store the
    # second one serves from (before, it stopped that store on its way out).
    store_pids = servers_on(data)
    env = {**os.environ, "STRONGROOM_DATA_DIR": str(data), "BIND": f"127.0.0.1:{port}"}
    env.pop("REDIS_URL", None)
    refused = subprocess.run(
        [sys.executable, "manage.py", "serve"], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode != 0 and f"127.0.0.1:{port} is in use" in refused.stderr
    assert servers_on(data) == store_pids and answers(base)
    stop_group(again, signal.SIGTERM)


def test_a_start_with_another_secret_key_is_refused_and_leaves_no_store_running(
    tmp_path: Path,
) -> None:
    """The store remembers the key it was first served with (strongroom/startup.py): `serve`
    with another says why and stops the embedded store it started (it ran on, serving nobody)."""
    data_dir, log = tmp_path / "var", tmp_path / "serve.log"
    first, _ = make_run(data_dir, log, SECRET_KEY="first-key-" + "x" * 40, STRONGROOM_DEMO="0")
    os.killpg(first.pid, signal.SIGTERM)
    first.wait(timeout=60)
    assert wait_for(lambda: not servers_on(data_dir), timeout=30)
    env = {**os.environ, "STRONGROOM_DATA_DIR": str(data_dir), "DEBUG": "0"}
    env.pop("REDIS_URL", None)
    env.update(SECRET_KEY="second-key-" + "x" * 40, STRONGROOM_STATIC_DIR=str(SHARED_STATIC))
    refused = subprocess.run(
        [sys.executable, "manage.py", "serve", "--no-demo", "--bind", f"127.0.0.1:{free_port()}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "This store was served with another SECRET_KEY." in refused.stderr, refused.stderr
    assert servers_on(data_dir) == []
