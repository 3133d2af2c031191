"""The site's gunicorn worker: gevent (each connection a greenlet), except that a request
reaches the application only once it has arrived whole.

One worker process per core serves all its connections on one thread: a request that waits for
the store (a round trip, a booking's fsync) gives the core to the next one, and no interpreter
lock passes between threads (docs/performance.md: the p99 of every benchmark row fell).

A connection costs a greenlet, not a thread, so slow clients keep no buyer out; still, a request
must arrive whole (its head, and its body by its length or chunk by chunk) within
REQUEST_DEADLINE_S of its first byte, or the connection is closed unanswered, and a kept-alive
connection waits at most gunicorn's `keepalive` seconds for its next request. What is refused at
once, before the application (a body over Django's limit, a head over 64 KiB, bytes that are no
HTTP request, an HTTP/1.1 head without exactly one Host), is strongroom/arrival.py; a client
that asks for "100 Continue" gets it here (after those checks). At most APP_CONCURRENCY
requests of a worker run the application at once (the others wait for a turn, not for a store
connection: the client's pool holds 200). A connection closed after its answer lingers for what
the client still sends (LINGER_S), so that the kernel does not reset it under the answer. TLS
is not terminated here (a proxy in front does), so its sockets take gunicorn's own path. Built
on gunicorn 27's gevent worker (`pyproject.toml` pins both).
"""

from __future__ import annotations

import errno
import select
import socket
from typing import Any

import gevent  # type: ignore[import-untyped]
import gevent.lock  # type: ignore[import-untyped]
from gunicorn import http  # type: ignore[import-untyped]
from gunicorn.workers.ggevent import GeventWorker  # type: ignore[import-untyped]

from strongroom.arrival import Arrival, arrival
from strongroom.conf import env_int
from strongroom.edge_errors import edge_error_bytes

# Seconds a connection may take to send a whole request (head and body) from its first byte: a
# browser on a slow phone line sends a form in well under a second.
REQUEST_DEADLINE_S = env_int("STRONGROOM_REQUEST_DEADLINE_SECONDS", 10, minimum=1, maximum=300)
APP_CONCURRENCY = 64  # requests of one worker in the application at once
LINGER_S = 2.0  # how long a closed connection's unread input is drained (gunicorn's own cap)
_DRAIN_LIMIT = 65536
_READ_SIZE = 65536
_QUIET_ERRORS = (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN)


class _Gone(Exception):
    """The client went away, or did not send a whole request in time: closed, unanswered."""


class _Idle(_Gone):
    """A kept-alive connection sent no next request within `keepalive`: closed, lingering (a
    request the client sends as it closes is drained, not answered with a reset)."""


class WholeRequestWorker(GeventWorker):
    """gevent whose application only ever sees requests that have arrived (see the module)."""

    def init_process(self) -> None:
        self.turns = gevent.lock.BoundedSemaphore(APP_CONCURRENCY)
        super().init_process()  # patches the standard library, then load_wsgi, then serves

    def load_wsgi(self) -> None:
        # Nothing of the site is imported before the standard library is patched (a lock made
        # earlier would block the whole process, not one greenlet). A store client inherited
        # across fork would share its sockets with the master's other workers: none is.
        from strongroom.store import reset_store

        reset_store()
        super().load_wsgi()

    def handle_exit(self, sig: Any, frame: Any) -> None:
        # SIGTERM: the mail sender winds down with the requests (it finishes the message under
        # way), so that both are done within gunicorn's graceful timeout.
        from strongroom.outbox_sender import sender_stop_soon

        sender_stop_soon()
        super().handle_exit(sig, frame)

    def handle(self, listener: Any, client: socket.socket, addr: Any) -> None:
        if self.cfg.is_ssl:
            super().handle(listener, client, addr)
            return
        client.setblocking(True)
        parser = http.get_parser(self.cfg, client, addr)
        name = listener.getsockname()
        ahead = b""  # what came after the last request: the start of the next one
        req = None
        linger = True
        try:
            while self.alive:
                seen = self._arrived(client, ahead, kept_alive=req is not None)
                if seen.step == "refuse":  # the site's own short page, as gunicorn's refusals
                    client.sendall(edge_error_bytes(seen.status, seen.reason))
                    break
                parser.unreader.unread(seen.data)
                req = next(parser)  # parsed from what arrived: no wait on the client
                with self.turns:
                    kept = self._answer(name, req, client, addr)
                if not kept:
                    break
                while req.body.read(_READ_SIZE):  # what the application left unread
                    pass
                ahead = parser.unreader.take_buffered()
        except _Idle:
            pass  # closed lingering: see _Idle
        except (_Gone, StopIteration, http.errors.NoMoreData):
            linger = False
        except OSError as error:
            linger = False
            if error.errno not in _QUIET_ERRORS:
                self.log.exception("Socket error processing request.")
        except Exception as error:  # gunicorn's own answer: its 400 or 500 page
            self.handle_error(req, client, addr, error)
        finally:
            if linger:
                _linger(client)
            client.close()

    def _answer(self, name: Any, req: Any, client: socket.socket, addr: Any) -> bool:
        """gunicorn's handling of one request; False when the answer closes the connection."""
        try:
            self.handle_request(name, req, client, addr)
        except StopIteration:
            return False
        return True

    def _arrived(self, client: socket.socket, ahead: bytes, *, kept_alive: bool) -> Arrival:
        """Read until a whole request has arrived, or is refused. A kept-alive connection waits
        up to `keepalive` seconds for its next request's first byte."""
        data = bytearray(ahead)
        if not data and kept_alive:
            data += _received(client, self.cfg.keepalive)
        continued = False
        with gevent.Timeout(REQUEST_DEADLINE_S, _Gone):
            while True:
                if data:
                    seen = arrival(data, continued=continued)
                    if seen.step == "continue":
                        continued = True
                        client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                    elif seen.step != "wait":
                        return seen
                data += _received(client, None)


def _received(client: socket.socket, timeout: float | None) -> bytes:
    try:
        with gevent.Timeout(timeout, _Idle):  # (None: no timer; a request's deadline is _Gone)
            chunk = client.recv(_READ_SIZE)
    except _Idle:
        # Under load the timer's greenlet may run late, after the client (reusing its idle
        # connection near the end of `keepalive`) has sent the next request: closed with that
        # request unread, the connection was reset, and the client could not tell whether its
        # POST ran. What has arrived by now is served; nothing: closed, lingering (_Idle), so that
        # a request sent as it closes is drained, not reset.
        late = _arrived_meanwhile(client)
        if late is None:
            raise
        chunk = late
    if not chunk:  # the client went away
        raise _Gone
    return chunk


def _arrived_meanwhile(client: socket.socket) -> bytes | None:
    """What the client has sent and nobody read yet, without waiting (None: nothing)."""
    readable, _, _ = select.select([client], [], [], 0)
    return client.recv(_READ_SIZE) if readable else None


def _linger(client: socket.socket) -> None:
    """Close after an answer: stop sending, drain what the client still sends, until it closes
    or LINGER_S (so that the kernel does not reset the connection under the answer)."""
    drained = 0
    try:
        client.shutdown(socket.SHUT_WR)
        with gevent.Timeout(LINGER_S, False):
            while drained <= _DRAIN_LIMIT:
                chunk = client.recv(_READ_SIZE)
                if not chunk:
                    break
                drained += len(chunk)
    except OSError:
        pass
