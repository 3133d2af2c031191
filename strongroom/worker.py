"""The site's gunicorn worker: gthread, except that a request reaches a thread only once it has
arrived whole.

gunicorn's gthread worker hands a connection to a thread as soon as it is accepted (or, kept
alive, as soon as its next request starts), and the thread then blocks reading the request. A
client that sends a request's first line and never ends its headers keeps that thread for as
long as it likes: sixteen such connections (two workers of eight threads) stopped the whole
site for every buyer. Here the worker's own loop reads what a connection sends without blocking,
and only a whole head (the blank line after the headers) with its body, when the body's length
is known and at most BODY_LIMIT, goes to a thread, already read. A connection that has not sent
a whole request within REQUEST_DEADLINE_S is closed; it never held a thread.

A larger body (an upload Django refuses by its length anyway), a chunked one, one whose client
waits for "100 Continue" before sending it, and a head longer than HEAD_LIMIT (gunicorn's parser
refuses it) go to a thread as soon as the head is seen, as before. TLS is not terminated here
(a proxy in front does), so its sockets take gunicorn's own path. Built on gunicorn 27's gthread
worker (`pyproject.toml` pins the major version).
"""

from __future__ import annotations

import errno
import re
import selectors
import time
from collections import deque
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gunicorn.workers.gthread import TConn, ThreadWorker  # type: ignore[import-untyped]

from strongroom.conf import env_int

# Seconds a connection may take to send a whole request (head and body) once the worker waits
# for one: a browser on a slow phone line sends a form in well under a second.
REQUEST_DEADLINE_S = env_int("STRONGROOM_REQUEST_DEADLINE_SECONDS", 10, minimum=1, maximum=300)
HEAD_LIMIT = 64 * 1024  # more than gunicorn takes (a 8,190-byte line, 100 fields of 8,190)
BODY_LIMIT = 2_621_440  # Django's DATA_UPLOAD_MAX_MEMORY_SIZE: a larger body is refused unread
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*([0-9]{1,12})[ \t]*(?:\r\n|$)")
_READ_SIZE = 65536


@dataclass(eq=False)
class _Arriving:
    """A connection whose request is still arriving, read by the worker's loop."""

    conn: TConn
    deadline: float
    data: bytearray = field(default_factory=bytearray)
    watched: bool = False  # registered with the poller
    done: bool = False


def request_arrived(data: bytes | bytearray) -> bool:
    """Whether `data` holds a whole request for a thread: the head, and the body when its length
    is given and at most BODY_LIMIT (otherwise the thread reads the body, as gunicorn would)."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return len(data) > HEAD_LIMIT
    head = bytes(data[:end]).lower()
    if b"\r\ntransfer-encoding:" in head or b"\r\nexpect:" in head:
        return True  # a chunked body, or a client waiting for "100 Continue": a thread's
    length = _CONTENT_LENGTH.search(head)
    if length is None:
        return True
    wanted = int(length.group(1))
    return wanted > BODY_LIMIT or len(data) - (end + 4) >= wanted


class WholeRequestWorker(ThreadWorker):
    """gthread whose threads only ever parse requests that have arrived (see the module)."""

    def init_process(self) -> None:
        self.arriving: deque[_Arriving] = deque()  # oldest first: deadlines come in order
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
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._readable, arriving))
            arriving.watched = True

    def _readable(self, arriving: _Arriving, client: Any) -> None:
        self._read(arriving)

    def _read(self, arriving: _Arriving) -> bool:
        """Read what has come; True when the connection left this stage (handed to a thread,
        or closed)."""
        try:
            chunk = arriving.conn.sock.recv(_READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            chunk = b""
        if not chunk:  # the client went away
            self._close(arriving)
            return True
        arriving.data += chunk
        if not request_arrived(arriving.data):
            return False
        self._unwatch(arriving)
        conn = arriving.conn
        conn.data_ready = True  # gthread's handle() then waits for nothing
        conn.arrived = bytes(arriving.data)
        self.enqueue_req(conn)
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
            # gunicorn to hand straight to a thread; a part waits in the loop like any other.
            ahead = parser.unreader.buf.getvalue()
            if ahead and not request_arrived(ahead):
                parser.unreader.take_buffered()
                conn.started = ahead
        return kept

    def _unwatch(self, arriving: _Arriving) -> None:
        arriving.done = True
        if arriving.watched:
            arriving.watched = False
            self.poller.unregister(arriving.conn.sock)

    def _close(self, arriving: _Arriving) -> None:
        self._unwatch(arriving)
        self.nr_conns -= 1
        arriving.conn.close()

    def murder_keepalived(self, force: bool = False) -> None:
        """gunicorn's expiry of kept-alive connections, and of requests too slow to arrive."""
        super().murder_keepalived(force)
        now = time.monotonic()
        while self.arriving:
            first = self.arriving[0]
            if not (first.done or force or first.deadline <= now):
                break
            self.arriving.popleft()
            if not first.done:
                self._close(first)
