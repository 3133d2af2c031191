"""A store that seems stalled is asked once for all, not once per request.

A stalled server (SIGSTOP, a disk that stops fsyncing) keeps its socket open and answers
nothing: every command waits out its whole timeout. Each request of a worker then waited its
own 1.5 s, and again for each later command it sent (measured under load: signed-in pages 3 s,
two timeouts; up to 4.5 s with 200 clients). Here, once one command has timed out, the pool
hands out no connection until the store has answered something again: one probe (a PING on a
fresh connection with a short timeout) asks for everyone, the requests that arrive meanwhile
wait at most for its answer, and when none comes they fail at once with `StoreSeemsStalled`
(a TimeoutError: every caller already reads it as the store not answering, the 503 page). The
next request after that probes again, so the first one after the stall finds the store. Any
answer, a probe's or a late one to a command sent before, ends the stall at once. (Holding
an unanswered probe's verdict for everyone for a while kept answering 503 for that while after
the store was back; a request refused once asks nothing more on its way to the 503 page
instead: `strongroom.middleware.store_failure_response`.)

A hiccup shorter than the command timeout (a slow fsync of a few hundred milliseconds) times
nothing out, so it never starts this: the requests just wait for it. One pool, one gate: the
single-server client's, and on a cluster each node's. There a command to a stopped primary
waited 4.5 s for its error (three timeouts: redis-py's cluster client tries again, reading the
topology between tries) and a page touching that primary twice twice as long; with the node's
gate, 0.5 s at the median and 2.0 s at most, while the other primaries answer as before (30
clients, one primary of three stopped for 10 s: 481 commands to it instead of 90, 909 to the
others instead of 186).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import redis

# How long a probe waits for the stalled store to answer: the requests that arrive during a
# stall wait at most about this long for their 503 page. Short, because it only needs to tell
# "answers again" (a PING comes back in well under a millisecond) from "still stopped".
PROBE_TIMEOUT_S = 0.5


class StoreSeemsStalled(redis.TimeoutError):
    """A command not sent: the store's last command timed out and the probe got no answer."""


class StallGate:
    """One process's view of one server: whether it seems stalled, and the one probe asking."""

    def __init__(self, probe: Callable[[], None]) -> None:
        self._probe = probe  # sends one PING; raises when no answer comes
        self._changed = threading.Condition()
        self.stalled = False
        self._probing = False
        self._probes_done = 0
        self.probes_sent = 0  # read by the tests: probes, not each request, ask a stalled store

    def timed_out(self) -> None:
        """A command got no answer within its timeout."""
        self.stalled = True

    def answered(self) -> None:
        """The store answered a command: whatever waits may go on."""
        if self.stalled:  # read without the lock: the common case costs one attribute read
            with self._changed:
                self.stalled = False
                self._changed.notify_all()

    def admit(self) -> None:
        """Return when a command may be sent; raise StoreSeemsStalled when the store seems
        stalled and the probe under way (or one started here) got no answer."""
        if not self.stalled:
            return
        with self._changed:
            if not self.stalled:
                return
            if self._probing:  # wait for the probe under way, not for a timeout of our own
                done = self._probes_done
                # A probe may spend PROBE_TIMEOUT_S connecting and as long reading.
                self._changed.wait_for(
                    lambda: not self.stalled or self._probes_done != done,
                    timeout=2 * PROBE_TIMEOUT_S,
                )
                if self.stalled:
                    raise StoreSeemsStalled("the store seems stalled: the probe got no answer")
                return
            self._probing = True
            self.probes_sent += 1
        try:
            self._probe()  # an answer calls answered() on the way
        except (redis.RedisError, OSError):
            pass  # no answer (or no server): still stalled, as far as we can tell
        finally:
            with self._changed:
                self._probing = False
                self._probes_done += 1
                self._changed.notify_all()
        if self.stalled:
            raise StoreSeemsStalled("the store seems stalled: a probe got no answer")


class GatedConnectionPool(redis.ConnectionPool):
    """A connection pool that asks its StallGate before handing out a connection."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stall_gate = StallGate(self._probe)

    def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        self.stall_gate.admit()
        return super().get_connection(*args, **kwargs)

    def make_connection(self) -> Any:
        connection: Any = super().make_connection()
        connection.stall_gate = self.stall_gate  # its answers and timeouts tell the gate
        return connection

    def _probe(self) -> None:
        """One PING on a connection of its own (the pool's may all be waiting on the store),
        with a short timeout, for connecting as for the answer."""
        kwargs = {
            **self.connection_kwargs,
            "socket_timeout": PROBE_TIMEOUT_S,
            "socket_connect_timeout": PROBE_TIMEOUT_S,
        }
        probe: Any = self.connection_class(**kwargs)  # a counting connection (connections.py)
        probe.stall_gate = self.stall_gate
        try:
            probe.send_command("PING")
            probe.read_response()
        finally:
            probe.disconnect()
