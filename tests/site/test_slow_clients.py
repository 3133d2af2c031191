"""Slow and idle clients keep no buyer out of the served site (strongroom/worker.py): a request
reaches the application only once it has arrived whole, and a connection that does not send one
in time is closed. The site served here has one worker (on gunicorn's gthread worker of 8
threads, 24 half-sent requests held all of them)."""

from __future__ import annotations

import http.client
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from strongroom.arrival import BODY_LIMIT, HEAD_LIMIT, LINE_LIMIT, arrival
from tests.conftest import site_env

DEADLINE_S = 2  # the served site's STRONGROOM_REQUEST_DEADLINE_SECONDS here
GIVE_UP_S = 30  # how long a check waits for an answer that must come (not a speed limit)


@pytest.fixture(scope="module")
def site(store_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    from strongroom.serving import start_site

    env = site_env(
        str(settings.REDIS_URL),
        tmp_path_factory.mktemp("slow-clients"),
        STRONGROOM_REQUEST_DEADLINE_SECONDS=str(DEADLINE_S),
    )
    process: subprocess.Popen[bytes]
    process, base = start_site(env, workers=1)
    host, port = base.removeprefix("http://").split(":")
    yield host, int(port)
    process.terminate()
    process.wait(timeout=10)


def _open(site: tuple[str, int], first: bytes = b"") -> socket.socket:
    sock = socket.create_connection(site, timeout=GIVE_UP_S)
    if first:
        sock.sendall(first)
    return sock


def _get(site: tuple[str, int], path: str = "/healthz") -> int:
    conn = http.client.HTTPConnection(*site, timeout=GIVE_UP_S)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    finally:
        conn.close()


def _answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_half_sent_and_idle_connections_do_not_keep_buyers_out(site: tuple[str, int]) -> None:
    held = [_open(site, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ") for _ in range(24)]
    held += [_open(site) for _ in range(24)]
    try:
        time.sleep(0.5)  # every one of them accepted and waiting
        assert [_get(site) for _ in range(10)] == [200] * 10
        assert _get(site, "/") == 200
    finally:
        for sock in held:
            sock.close()


def test_a_request_not_sent_whole_in_time_is_closed_unanswered(site: tuple[str, int]) -> None:
    slow = _open(site, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    for piece in (b"X-A: 1\r\n", b"X-B: 2\r\n"):  # a byte now and then does not extend it
        time.sleep(DEADLINE_S / 3)
        slow.sendall(piece)
    try:
        assert _answer(slow) == b""
    finally:
        slow.close()


def test_a_form_sent_in_pieces_and_pipelined_requests_are_served(site: tuple[str, int]) -> None:
    conn = http.client.HTTPConnection(*site, timeout=GIVE_UP_S)
    conn.request("GET", "/accounts/login/")
    page = conn.getresponse()
    cookie = re.search(r"csrftoken=([^;]+)", page.getheader("Set-Cookie") or "")
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.read())
    conn.close()
    assert cookie and token
    body = b"csrfmiddlewaretoken=" + token.group(1) + b"&username=nobody&password=wrong"
    head = (
        b"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        b"Cookie: csrftoken=" + cookie.group(1).encode() + b"\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    sock = _open(site)
    for piece in (head[:20], head[20:], body[:7], body[7:]):
        sock.sendall(piece)
        time.sleep(0.2)
    answer = _answer(sock)
    sock.close()
    # Every field reached Django: the token passed, the name and password were checked.
    assert answer.startswith(b"HTTP/1.1 400"), answer[:80]
    assert b"The username or the password is wrong." in answer
    one = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    two = one + b"\r\n" + one
    sock = _open(site, two)
    time.sleep(0.3)
    sock.sendall(b"Connection: close\r\n\r\n")  # the second finishes in a later packet
    answers = re.findall(rb"HTTP/1\.1 (\d{3})", _answer(sock))
    sock.close()
    assert answers == [b"200", b"200"]


def test_a_client_that_waits_for_100_continue_is_answered(site: tuple[str, int]) -> None:
    body = b"q=nothing"
    sock = _open(site, b"POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                 b"Expect: 100-continue\r\nContent-Length: 9\r\n\r\n")  # fmt: skip
    assert sock.recv(64).startswith(b"HTTP/1.1 100 Continue")  # before the body is sent
    sock.sendall(body)
    answer = _answer(sock)
    sock.close()
    assert re.match(rb"HTTP/1\.1 [1-5]\d\d", answer), answer[:80]


def test_answers_closed_on_clients_that_never_read_them_do_not_stall_the_rest(
    site: tuple[str, int],
) -> None:
    """An HTTP/1.0 answer closes its connection; the close lingers for what the client still
    sends (up to 2 s) without holding up anyone else."""
    idle = [_open(site, b"GET /healthz HTTP/1.0\r\n\r\n") for _ in range(20)]
    try:
        time.sleep(0.5)
        assert [_get(site) for _ in range(5)] == [200] * 5
    finally:
        for sock in idle:
            sock.close()


def test_what_the_application_could_not_finish_is_refused_at_once_or_closed(
    site: tuple[str, int],
) -> None:
    """Refused by the worker at once: a head without end past 64 KiB, a body over Django's
    limit, bytes that are no request. Closed at the deadline: a body announced and not sent,
    100 Continue asked and no body sent. Meanwhile the site answers everyone else."""
    start = b"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    refused = {
        "head": (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Pad: " + b"p" * 70_000, b"431"),
        "body": (start + b"Content-Length: 0000000000000003000000\r\n\r\nabc", b"413"),
        "tls": (bytes.fromhex("160301020001") + b"\x00" * 40, b"400"),
        "bare LF": (b"GET /healthz HTTP/1.1\nHost: x\n\n", b"400"),
    }
    held = [_open(site, start + b"Content-Length: 100\r\n\r\nshort") for _ in range(12)]
    held += [
        _open(site, start + b"Expect: 100-continue\r\nContent-Length: 100\r\n\r\n")
        for _ in range(12)
    ]
    held += [
        _open(site, start + b"Transfer-Encoding: chunked\r\n\r\n1\r\nx\r\n") for _ in range(12)
    ]
    try:
        for name, (sent, status) in refused.items():
            sock = _open(site, sent)
            answer = _answer(sock)
            sock.close()
            assert answer.startswith(b"HTTP/1.1 " + status), (name, answer[:60])
            # The site's own short page with its security headers, as gunicorn's refusals get.
            assert b"Content-Security-Policy: default-src 'self'" in answer, name
            assert "无法读取此请求".encode() in answer, name
        assert [_get(site) for _ in range(5)] == [200] * 5
        assert all(_answer(sock) in (b"", b"HTTP/1.1 100 Continue\r\n\r\n") for sock in held)
    finally:
        for sock in held:
            sock.close()


@pytest.mark.parametrize(
    ("data", "step"),
    [
        (b"GE", "wait"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n", "wait"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "go"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab", "wait"),
        (b"POST / HTTP/1.1\r\nHost: x\r\ncontent-length:  5 \r\n\r\nabcde", "go"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", "wait"),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3\r\nabc\r\n0\r\n\r\n",
            "go",
        ),
        (b"GET / HTTP/1.1\r\n\r\n", "refuse"),  # HTTP/1.1 names its host once
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "refuse"),
        (b"GET / HTTP/1.0\r\n\r\n", "go"),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 9\r\n\r\n",
            "continue",
        ),
        # Without a Host: refused before any 100 Continue invites the body.
        (b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 9\r\n\r\n", "refuse"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "go"),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: "
            + str(BODY_LIMIT + 1).encode()
            + b"\r\n\r\n",
            "refuse",
        ),
        (b"GET /" + b"a" * LINE_LIMIT, "refuse"),
        (b"GET / HTTP/1.1\r\nX: " + b"a" * HEAD_LIMIT, "refuse"),
        (b"\x16\x03\x01\x02\x00", "refuse"),
    ],
)
def test_what_counts_as_arrived(data: bytes, step: str) -> None:
    assert arrival(data).step == step


def test_a_body_sent_after_100_continue_reaches_the_application_without_the_expect_field() -> None:
    head = b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"
    seen = arrival(head + b"abc", continued=True)
    assert seen.step == "go"
    assert seen.data == b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"


class _LateTimer:
    """A connection whose wait for the next request ends by its timer (the timer's greenlet ran
    late, under load) although the request has arrived meanwhile."""

    def __init__(self, real: socket.socket) -> None:
        self.real, self.timer_due = real, True

    def fileno(self) -> int:
        return self.real.fileno()

    def recv(self, size: int) -> bytes:
        from strongroom.worker import _Idle

        if self.timer_due:
            self.timer_due = False
            raise _Idle
        return self.real.recv(size)


def test_a_request_that_arrived_as_the_keepalive_wait_ended_is_served_not_reset() -> None:
    """A cluster probe reset 43 of 201 requests sent on connections idle for 5.0-5.8 s (the
    site's keepalive is 5 s): the worker closed them with the request unread. What arrived is
    read and served; an idle connection is still closed, lingering (_Idle: a request sent as
    it closes is drained, not reset). A request's own deadline is not stretched so."""
    from strongroom.worker import _Gone, _Idle, _received

    served, client = socket.socketpair()
    idle, other = socket.socketpair()
    try:
        client.sendall(b"GET /healthz HTTP/1.1\r\n")
        assert _received(_LateTimer(served), 5.0) == b"GET /healthz HTTP/1.1\r\n"  # type: ignore[arg-type]
        with pytest.raises(_Idle):
            _received(_LateTimer(idle), 5.0)  # type: ignore[arg-type]
        late = _LateTimer(served)
        late.recv = lambda size: (_ for _ in ()).throw(_Gone())  # type: ignore[method-assign]
        client.sendall(b"Host: x\r\n")  # arrived, but the request's deadline has passed
        with pytest.raises(_Gone):
            _received(late, None)  # type: ignore[arg-type]
    finally:
        for end in (served, client, idle, other):
            end.close()
