"""The store's connection classes: each counts the round trips it sends (`RoundTrips`, read
by `strongroom.store.round_trips`), answers the pool's "anything unread?" check, asked of
every connection it hands out, with one plain poll(2), and tells its pool's StallGate
(`strongroom.stall`) whether the store answered or timed out."""

from __future__ import annotations

import select
import sys
from typing import TYPE_CHECKING, Any

import redis

if TYPE_CHECKING:
    from strongroom.stall import StallGate


class RoundTrips:
    """Counts the times a request is sent to the store (one pipeline is one round trip)."""

    count = 0


def _plain_poll() -> Any:
    """select.poll as the system has it: gevent's patched one makes a zero-timeout readiness
    check cost a watcher, a timeout and a switch; the plain call with timeout 0 never blocks."""
    monkey = sys.modules.get("gevent.monkey")
    poll = monkey.get_original("select", "poll") if monkey is not None else select.poll
    return poll()


class _CountingMixin:
    # Set by a GatedConnectionPool on the connections it makes (None: a connection made
    # outside one, as the tests' own clients).
    stall_gate: StallGate | None = None

    def connect_check_health(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().connect_check_health(*args, **kwargs)  # type: ignore[misc]
        except redis.TimeoutError:  # connecting to a stopped server times out too
            if self.stall_gate is not None:
                self.stall_gate.timed_out()
            raise

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        gate = self.stall_gate
        try:
            reply = super().read_response(*args, **kwargs)  # type: ignore[misc]
        except redis.TimeoutError:
            if gate is not None:
                gate.timed_out()
            raise
        except redis.ResponseError:  # an error reply is an answer
            if gate is not None:
                gate.answered()
            raise
        if gate is not None:
            gate.answered()
        return reply

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        RoundTrips.count += 1
        super().send_packed_command(command, check_health)  # type: ignore[misc]

    def can_read(self, timeout: float = 0) -> bool:
        # The pool asks this of every connection it hands out (timeout 0): nothing waiting on
        # the socket and nothing buffered is the common answer, found here with one plain
        # poll(2); anything else (data, a closed socket) goes through redis-py's own check.
        sock = getattr(self, "_sock", None)
        if timeout == 0 and sock is not None and not _parser_buffered(self):
            poller = _plain_poll()
            poller.register(sock.fileno(), select.POLLIN)
            if not poller.poll(0):
                return False
        return bool(super().can_read(timeout))  # type: ignore[misc]


def _parser_buffered(connection: Any) -> bool:
    """Whether input may wait above the socket: in hiredis's reader, or decrypted in a TLS
    layer (True when it cannot tell: another parser)."""
    pending = getattr(connection._sock, "pending", None)
    if pending is not None and pending():
        return True
    reader = getattr(getattr(connection, "_parser", None), "_reader", None)
    has_data = getattr(reader, "has_data", None)
    return has_data is None or bool(has_data())


class CountingConnection(_CountingMixin, redis.Connection):
    pass


class CountingUnixConnection(_CountingMixin, redis.UnixDomainSocketConnection):
    # redis-py 8.1 reads `port` when connecting times out, which a Unix socket connection
    # lacks: the AttributeError made a 500 of a stalled store's full accept queue.
    port: int | None = None


class CountingSSLConnection(_CountingMixin, redis.SSLConnection):
    pass


COUNTING = {
    redis.Connection: CountingConnection,
    redis.UnixDomainSocketConnection: CountingUnixConnection,
    redis.SSLConnection: CountingSSLConnection,
}
