"""The site's gunicorn worker: gthread, except that a request reaches a thread only once it has
arrived whole.

gunicorn's gthread worker hands a connection to a thread as soon as it is accepted (or, kept
alive, as soon as its next request starts), and the thread then blocks reading the request. A
client that sends a request's first line and never ends its headers keeps that thread for as
long as it likes: sixteen such connections (two workers of eight threads) stopped the whole
site for every buyer. Here the worker's own loop reads what a connection sends without blocking,
and only a whole request (its head, and its body by its length or chunk by chunk) goes to a
thread, already read. A connection that has not sent a whole request within REQUEST_DEADLINE_S
is closed; it never held a thread.

What "whole" means, and what is refused at once without a thread (a body over Django's limit,
a head over 64 KiB, bytes that are no HTTP request, an HTTP/1.1 head without exactly one Host),
is strongroom/arrival.py; a client that asks for "100 Continue" gets it from the loop (after
those checks). A connection closed after its answer lingers in
the loop too (gunicorn 27 lingers up to 2 s in its main loop, which stalled every other
connection of the worker). TLS is not terminated here (a proxy in front does), so its sockets
take gunicorn's own path. Built on gunicorn 27's gthread worker (`pyproject.toml` pins it).
"""

from __future__ import annotations

import errno
import selectors
import socket
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from gunicorn.workers.gthread import TConn, ThreadWorker  # type: ignore[import-untyped]

from strongroom.arrival import arrival
from strongroom.conf import env_int
from strongroom.edge_errors import edge_error_bytes

# Seconds a connection may take to send a whole request (head and body) once the worker waits
# for one: a browser on a slow phone line sends a form in well under a second.
REQUEST_DEADLINE_S = env_int("STRONGROOM_REQUEST_DEADLINE_SECONDS", 10, minimum=1, maximum=300)
LINGER_S = 2.0  # how long a closed connection's unread input is drained (gunicorn's own cap)
_DRAIN_LIMIT = 65536
_READ_SIZE = 65536


@dataclass(eq=False)
class _Arriving:
    """A connection whose request is still arriving (or, lingering, whose close is), read by
    the worker's loop."""

    conn: TConn
    deadline: float
    data: bytearray = field(default_factory=bytearray)
    continued: bool = False  # 100 Continue sent
    drained: int = 0  # lingering: bytes read and dropped
    watched: bool = False  # registered with the poller
    done: bool = False


class WholeRequestWorker(ThreadWorker):
    """gthread whose threads only ever parse requests that have arrived (see the module)."""

    def handle_exit(self, sig: Any, frame: Any) -> None:
        # SIGTERM: the mail sender winds down with the requests (it finishes the message under
        # way), so that both are done within gunicorn's graceful timeout.
        from strongroom.outbox_sender import sender_stop_soon

        sender_stop_soon()
        super().handle_exit(sig, frame)

    def init_process(self) -> None:
        self.arriving: deque[_Arriving] = deque()  # oldest first: deadlines come in order
        self.lingering: deque[_Arriving] = deque()  # the same, for closes
        super().init_process()

    def accept(self, listener: Any) -> None:
        if self.cfg.is_ssl:
            super().accept(listener)
            return
        try:
            client, address = listener.accept()
        except OSError as error:
            if error.errno in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                return
            raise
        self.nr_conns += 1
        self._await_request(TConn(self.cfg, client, address, listener.getsockname()))

    def on_client_socket_readable(self, conn: TConn, client: Any) -> None:
        """A kept-alive connection's next request starts: read it here, not in a thread."""
        if self.cfg.is_ssl:
            super().on_client_socket_readable(conn, client)
            return
        self.poller.unregister(client)
        self.keepalived_conns.remove(conn)
        self._await_request(conn)

    def _await_request(self, conn: TConn) -> None:
        conn.sock.setblocking(False)
        arriving = _Arriving(conn, time.monotonic() + REQUEST_DEADLINE_S)
        arriving.data += getattr(conn, "started", b"")  # the part a thread read ahead
        conn.started = b""
        self.arriving.append(arriving)
        if not self._read(arriving):  # often whole already: no trip through the poller
            self._watch(arriving, self._read)

    def _watch(self, arriving: _Arriving, reader: Any) -> None:
        self.poller.register(
            arriving.conn.sock, selectors.EVENT_READ, lambda _sock: reader(arriving)
        )
        arriving.watched = True

    def _read(self, arriving: _Arriving) -> bool:
        """Read what has come and act on it; True when the connection left this stage (handed
        to a thread, refused or closed)."""
        try:
            chunk = arriving.conn.sock.recv(_READ_SIZE)
        except (BlockingIOError, InterruptedError):
            chunk = None
        except OSError:
            chunk = b""
        if chunk == b"":  # the client went away
            self._close(arriving)
            return True
        if chunk:
            arriving.data += chunk
        elif not arriving.data:
            return False
        seen = arrival(arriving.data, continued=arriving.continued)
        if seen.step == "wait":
            return False
        if seen.step == "continue":
            arriving.continued = True
            return not self._send(arriving, b"HTTP/1.1 100 Continue\r\n\r\n")
        if seen.step == "refuse":  # the site's own short page, as gunicorn's refusals get
            if self._send(arriving, edge_error_bytes(seen.status, seen.reason)):
                self._unwatch(arriving)
                self._linger(arriving.conn)
            return True
        self._unwatch(arriving)
        conn = arriving.conn
        conn.data_ready = True  # gthread's handle() then waits for nothing
        conn.arrived = seen.data
        self.enqueue_req(conn)
        return True

    def _send(self, arriving: _Arriving, data: bytes) -> bool:
        """A short answer from the loop (it fits the socket's buffer); False when the
        connection is gone (and closed)."""
        try:
            arriving.conn.sock.send(data)
        except OSError:
            self._close(arriving)
            return False
        return True

    def handle(self, conn: TConn) -> Any:
        arrived = getattr(conn, "arrived", b"")
        if arrived:
            conn.arrived = b""
            conn.sock.setblocking(True)
            conn.init()  # the parser, once per connection
            conn.parser.unreader.unread(arrived)
        kept = super().handle(conn)
        parser = getattr(conn, "parser", None)
        if kept and parser is not None and not self.cfg.is_ssl:
            # Read ahead with the request: the start of the next one. A whole one is left for
            # gunicorn to hand straight to a thread; a part goes back to the loop.
            ahead = parser.unreader.buf.getvalue()
            if ahead and arrival(ahead).step != "go":
                parser.unreader.take_buffered()
                conn.started = ahead
        return kept

    def finish_request(self, conn: TConn, fs: Any) -> None:
        """gunicorn's, except that a connection whose next request has started waits for the
        rest in the loop (gunicorn would park it as idle), and one to close lingers there."""
        if self.cfg.is_ssl or fs.cancelled() or fs.exception() is not None:
            super().finish_request(conn, fs)
            return
        kept = fs.result()
        started: bytes = getattr(conn, "started", b"")
        if kept is True and started and self.alive:
            self._await_request(conn)
        elif kept is False or kept is None:
            self._linger(conn)
        else:
            super().finish_request(conn, fs)

    def _linger(self, conn: TConn) -> None:
        """Close after an answer: stop sending, drain what the client still sends (so that the
        kernel does not reset the connection under the answer), close at its end or LINGER_S."""
        lingering = _Arriving(conn, time.monotonic() + LINGER_S)
        try:
            conn.sock.setblocking(False)
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._close(lingering)
            return
        self.lingering.append(lingering)
        self._watch(lingering, self._drain)

    def _drain(self, lingering: _Arriving) -> bool:
        try:
            chunk = lingering.conn.sock.recv(_READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            chunk = b""
        lingering.drained += len(chunk)
        if not chunk or lingering.drained > _DRAIN_LIMIT:
            self._close(lingering)
            return True
        return False

    def _unwatch(self, arriving: _Arriving) -> None:
        arriving.done = True
        arriving.data = bytearray()  # a handed-over request is not kept behind a slow one
        if arriving.watched:
            arriving.watched = False
            self.poller.unregister(arriving.conn.sock)

    def _close(self, arriving: _Arriving) -> None:
        self._unwatch(arriving)
        self.nr_conns -= 1
        arriving.conn.close()

    def murder_keepalived(self, force: bool = False) -> None:
        """gunicorn's expiry of kept-alive connections, and of requests too slow to arrive and
        closes that linger too long."""
        super().murder_keepalived(force)
        now = time.monotonic()
        for waiting in (self.arriving, self.lingering):
            while waiting:
                first = waiting[0]
                if not (first.done or force or first.deadline <= now):
                    break
                waiting.popleft()
                if not first.done:
                    self._close(first)
