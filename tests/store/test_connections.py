"""The store's connections (strongroom/connections.py): the pool's check for unread input,
answered with one plain poll(2), still keeps a connection with unread input or a closed socket
from being handed out, as redis-py's own check does."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import redis

from strongroom.connections import COUNTING, CountingUnixConnection, _parser_buffered
from strongroom.store import connect

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.store


def _one_server(r: redis.Redis) -> redis.Redis:
    if isinstance(r, redis.RedisCluster):
        pytest.skip("a cluster client has a pool per node")
    return r


def test_a_quiet_connection_has_nothing_to_read(r: redis.Redis) -> None:
    pool = _one_server(r).connection_pool
    connection = pool.get_connection()
    try:
        assert type(connection) in COUNTING.values()
        assert connection.can_read(0) is False
    finally:
        pool.release(connection)


def test_unread_input_is_seen_and_the_connection_not_handed_out(r: redis.Redis) -> None:
    client = _one_server(r)
    client.set("sr:test:unread", "the value")
    pool = client.connection_pool
    connection = pool.get_connection()
    connection.send_command("PING")  # its answer is left unread
    deadline = time.monotonic() + 2
    while not connection.can_read(0):
        assert time.monotonic() < deadline, "the PING was never answered"
        time.sleep(0.01)
    socket_before = connection._sock
    pool.release(connection)
    again = pool.get_connection()  # the pool reconnects rather than hand out the PONG
    try:
        assert again._sock is not socket_before or not again.can_read(0)
    finally:
        pool.release(again)
    assert client.get("sr:test:unread") == "the value"


def test_a_socket_the_server_closed_is_not_handed_out(r: redis.Redis) -> None:
    client = _one_server(r)
    fresh = connect(f"unix://{client.connection_pool.connection_kwargs['path']}")
    pool = fresh.connection_pool
    connection = pool.get_connection()
    assert isinstance(connection, CountingUnixConnection)
    pool.release(connection)
    client.client_kill_filter(_type="normal", skipme=True)  # the server closes it
    time.sleep(0.1)
    with pytest.raises(redis.ConnectionError):
        connection.can_read(0)  # readable, and closed: redis-py's own check says so
    assert fresh.ping() is True  # the pool saw the closed socket and connected again
    fresh.close()


def test_input_decrypted_above_the_socket_counts_as_unread(r: redis.Redis) -> None:
    """A TLS socket may hold decrypted input that poll(2) cannot see: it is asked first."""
    pool = _one_server(r).connection_pool
    connection = pool.get_connection()
    try:
        real = connection._sock

        class _Pending:  # the socket as ssl wraps it, with input already decrypted
            def __getattr__(self, name: str) -> object:
                return getattr(real, name)

            def pending(self) -> int:
                return 1

        connection._sock = _Pending()  # type: ignore[assignment]
        assert _parser_buffered(connection)
        connection._sock = real
        assert not _parser_buffered(connection)
    finally:
        pool.release(connection)


# Run as the site's gevent workers run: gevent's connect waits for a full accept queue (until its
# timeout), where a plain non-blocking one is refused at once.
_CONNECT_UNDER_GEVENT = """
import sys
from gevent import monkey
monkey.patch_all()
from strongroom.connections import CountingUnixConnection
try:
    CountingUnixConnection(path=sys.argv[1], socket_connect_timeout=0.2).connect()
except Exception as error:
    print(type(error).__name__)
"""


def test_connecting_to_a_socket_that_accepts_nothing_times_out_as_unavailable() -> None:
    # A stalled server's accept queue fills up under load: connecting then times out. redis-py
    # 8.1 reads the connection's `port` on that path, which a Unix socket connection lacked, and
    # the AttributeError was a 500 instead of the 503 page.
    # A Unix socket path has about 100 bytes at most: not under the test run's own tmp dirs.
    with tempfile.TemporaryDirectory(prefix="sr-", dir="/tmp") as short:
        _connect_to_a_full_queue(str(Path(short) / "stalled.sock"))


def _connect_to_a_full_queue(path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path)
        listener.listen(0)  # never accepts, as a stopped server
        waiting = []
        try:
            while True:  # fill its accept queue
                queued = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                queued.setblocking(False)
                waiting.append(queued)
                queued.connect(path)
        except BlockingIOError:
            pass
        try:
            found = subprocess.run(
                [sys.executable, "-c", _CONNECT_UNDER_GEVENT, path],
                cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
            )  # fmt: skip
        finally:
            for queued in waiting:
                queued.close()
    assert found.stdout.strip() == "TimeoutError", found.stdout + found.stderr
