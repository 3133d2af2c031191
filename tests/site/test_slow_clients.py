"""Slow and idle clients hold no thread of the served site (strongroom/worker.py): a request
reaches a thread only once it has arrived whole, and a connection that does not send one in
time is closed. The site served here has one worker of 8 threads: 24 half-sent requests would
have held all of them."""

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

from strongroom.worker import BODY_LIMIT, HEAD_LIMIT, request_arrived
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
    process, base = start_site(env, workers=1, threads=8)
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


@pytest.mark.parametrize(
    ("data", "whole"),
    [
        (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n", False),
        (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", True),
        (b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", False),
        (b"POST / HTTP/1.1\r\ncontent-length:  5 \r\n\r\nabcde", True),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", True),
        (b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 9\r\n\r\n", True),
        (b"POST / HTTP/1.1\r\nContent-Length: " + str(BODY_LIMIT + 1).encode() + b"\r\n\r\n", True),
        (b"GET /" + b"a" * HEAD_LIMIT, True),
    ],
)
def test_what_counts_as_arrived(data: bytes, whole: bool) -> None:
    assert request_arrived(data) is whole
