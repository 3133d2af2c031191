"""A stalled store is asked once for everyone (strongroom/stall.py): once a command timed out,
the requests after it wait for one shared probe, not for a timeout each; a hiccup shorter than
the timeout gives no error at all; any answer ends the stall. On a real embedded Valkey stopped
with SIGSTOP (a stalled server: alive, its socket open, answering nothing)."""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from strongroom import embedded
from strongroom.stall import StallGate, StoreSeemsStalled
from strongroom.store import COMMAND_TIMEOUT_S, connect
from tests.conftest import person_make
from tests.store.test_store_stall import Browser, served_on_embedded, wait_for

ASKERS = 8


@pytest.fixture
def stoppable(tmp_path: Path) -> Iterator[Path]:
    """The data directory of an embedded Valkey of the test's own (one server)."""
    embedded.ensure_running(tmp_path)
    try:
        yield tmp_path
    finally:
        embedded.stop(tmp_path)


@contextlib.contextmanager
def stopped(data_dir: Path) -> Iterator[None]:
    """The store's process stopped (SIGSTOP) for the block, continued whatever happens."""
    pid = embedded.live_server_pid(data_dir)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def gate_of(client: redis.Redis) -> StallGate:
    gate: StallGate = client.connection_pool.stall_gate  # type: ignore[attr-defined]
    return gate


def errors_of_askers(
    client: redis.Redis, count: int, key: str = "sr:test:stall"
) -> list[BaseException | None]:
    """What `count` threads reading `key` at the same moment got (None: an answer)."""
    found: list[BaseException | None] = []
    start = threading.Barrier(count)

    def ask() -> None:
        start.wait()
        try:
            client.get(key)
        except redis.RedisError as error:
            found.append(error)
        else:
            found.append(None)

    threads = [threading.Thread(target=ask) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return found


def test_after_a_timeout_the_requests_share_one_probe_instead_of_a_timeout_each(
    stoppable: Path,
) -> None:
    client = connect(embedded.url_for(stoppable))
    ungated = redis.Redis.from_url(embedded.url_for(stoppable), socket_timeout=COMMAND_TIMEOUT_S)
    gate = gate_of(client)
    assert client.ping() and ungated.ping()
    try:
        with stopped(stoppable):
            # The first command cannot know: it waits out its own timeout.
            with pytest.raises(redis.TimeoutError) as first:
                client.get("sr:test:stall")
            assert not isinstance(first.value, StoreSeemsStalled)
            assert gate.stalled
            # The next ones, all at once: refused after the probe, none sent to wait on its own.
            errors = errors_of_askers(client, ASKERS)
            assert len(errors) == ASKERS
            assert all(isinstance(error, StoreSeemsStalled) for error in errors), errors
            assert 1 <= gate.probes_sent < ASKERS
            # The control: a pool without the gate sends each and each waits its own timeout.
            control = errors_of_askers(ungated, 3)
            assert all(
                isinstance(error, redis.TimeoutError) and not isinstance(error, StoreSeemsStalled)
                for error in control
            ), control
        # Continued: the next command's probe is answered, and so is the command.
        assert client.set("sr:test:stall", "back") is True
        assert not gate.stalled
        probes = gate.probes_sent
        assert client.get("sr:test:stall") == "back"
        assert gate.probes_sent == probes  # no stall, no probe
    finally:
        client.close()
        ungated.close()


def test_a_late_answer_to_a_command_sent_before_ends_the_stall(stoppable: Path) -> None:
    client = connect(embedded.url_for(stoppable))
    gate = gate_of(client)
    pool = client.connection_pool
    # A command that waits longer than the others (as a blocking read does) is still waiting
    # when another times out; its answer, once the store runs again, ends the stall.
    patient = pool.get_connection()
    answers: list[object] = []
    try:
        with stopped(stoppable):
            patient.send_command("PING")
            late = threading.Thread(
                target=lambda: answers.append(patient.read_response(timeout=30))
            )
            late.start()
            with pytest.raises(redis.TimeoutError):
                client.get("sr:test:stall")
            assert gate.stalled
        late.join(timeout=30)
        assert answers == ["PONG"]
        assert not gate.stalled and gate.probes_sent == 0
    finally:
        pool.release(patient)
        client.close()


def test_a_hiccup_shorter_than_the_command_timeout_is_waited_for(stoppable: Path) -> None:
    client = connect(embedded.url_for(stoppable))
    gate = gate_of(client)
    outcome: list[object] = []
    try:
        with stopped(stoppable):  # a slow fsync: a few hundred milliseconds
            asking = threading.Thread(target=lambda: outcome.append(client.set("sr:test:h", "1")))
            asking.start()
            time.sleep(COMMAND_TIMEOUT_S / 5)
        asking.join(timeout=30)
        assert outcome == [True]
        assert not gate.stalled and gate.probes_sent == 0
    finally:
        client.close()


def seconds_to_answer(ask: Callable[[], int]) -> tuple[int, float]:
    start = time.monotonic()
    status = ask()
    return status, time.monotonic() - start


def anonymous_status(base: str, path: str) -> int:
    try:
        with urllib.request.urlopen(base + path, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_a_served_site_answers_a_stall_with_503_without_a_timeout_per_request(
    tmp_path: Path,
) -> None:
    with served_on_embedded(tmp_path) as (_site, base):
        store = connect(embedded.url_for(tmp_path))
        someone = person_make(store, "stalled")
        store.close()
        browser = Browser(base)
        browser.log_in(someone.username, someone.password)
        asks: list[Callable[[], int]] = [
            lambda: browser.request("/")[0],
            lambda: browser.request("/book/mine/")[0],
            lambda: anonymous_status(base, "/catalog/"),
            lambda: anonymous_status(base, "/healthz"),
        ]
        with stopped(tmp_path):
            # Both workers meet the stall (each its first timeout), then requests come one by
            # one: each waits for a probe, not a timeout of its own (before, each waited 1.5 s,
            # a signed-in page 3 s: two).
            first = [anonymous_status(base, "/healthz") for _ in range(2)]
            timed = [seconds_to_answer(asks[n % len(asks)]) for n in range(8)]
            # Many at once, signed-in and not: every one the 503 page, never a 500.
            together: list[int] = []
            threads = [
                threading.Thread(target=lambda ask=ask: together.append(ask())) for ask in asks * 6
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
        assert first == [503, 503]
        assert [status for status, _ in timed] == [503] * len(timed)
        # A request that waits out a timeout of its own takes at least COMMAND_TIMEOUT_S.
        assert statistics.median(seconds for _, seconds in timed) < COMMAND_TIMEOUT_S, timed
        assert together == [503] * len(asks) * 6, together
        # Continued: the site serves again by itself.
        assert wait_for(lambda: browser.request("/book/mine/")[0] == 200, timeout=10)
        assert anonymous_status(base, "/healthz") == 200
