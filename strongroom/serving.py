"""Starting the site with gunicorn the way production runs it, for `serve`, tests and bench;
`fetch`, one request to the served site as a client sends it."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from strongroom.static_files import static_collect

ROOT = Path(__file__).resolve().parent.parent


# The worker model, chosen by measurement (docs/performance.md): gevent workers, one per core
# (WEB_CONCURRENCY sets another count). A request waiting for the store's fsync or a round trip
# gives the core to the next, on one thread: against gthread workers of 8 threads (the model
# until 2026-11-28), a lower p99 on each of the benchmark's seven rows. The worker hands the
# application only requests that have arrived whole (strongroom/worker.py): a client that never
# finishes its headers holds a greenlet for at most STRONGROOM_REQUEST_DEADLINE_SECONDS.
WHOLE_REQUEST_WORKER = "strongroom.worker.WholeRequestWorker"
# Where start_site serves: loopback, on a free port.
LOOPBACK = "127.0.0.1"


# prctl(2): the signal the kernel sends a process when the thread that started it ends.
_PR_SET_PDEATHSIG = 1


def stopped_with_parent() -> Callable[[], None]:
    """For Popen's preexec_fn: the child (gunicorn's master) gets SIGTERM, its graceful stop,
    when the process that started it dies, even by kill -9, so no site is left serving with
    nothing to stop it and its port taken. Linux (prctl); elsewhere the child runs on."""
    parent = os.getpid()
    try:  # found here, before the fork: the child only calls it
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        prctl = None

    def arm() -> None:
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the signal was asked for
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


def bind_in_use(bind: str) -> bool:
    """Whether `host:port` is taken: another site (perhaps one left running) serves there.
    Unix sockets and addresses it cannot read are not checked (False)."""
    bind = bind.strip().removeprefix("tcp://")
    if bind.startswith(("unix:", "fd://")):
        return False
    host, sep, port = bind.rpartition(":")
    if not sep or "]" in port or (":" in host and not host.endswith("]")):
        host, port = bind, "8000"  # a host alone (IPv6 in brackets): gunicorn's port
    if not port.isdigit():
        return False
    host = host.strip("[]") or "0.0.0.0"  # noqa: S104 (gunicorn's own reading of ":8000")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
        try:
            probe.bind((host, int(port)))
        except OSError as refused:
            return refused.errno == errno.EADDRINUSE
    return False


def default_workers() -> int:
    return os.cpu_count() or 1


def gunicorn_command(
    *, bind: str, workers: int, access_log: bool = False, app: str = "strongroom.wsgi"
) -> list[str]:
    """The gunicorn command line: the site's gevent workers (strongroom/worker.py), settings
    from strongroom/gunicorn_conf.py; `app` is the WSGI module (the benchmark wraps the site's)."""
    command = [
        sys.executable, "-m", "gunicorn", app, "--bind", bind,
        "--workers", str(workers), "--config", "python:strongroom.gunicorn_conf",
        "--worker-class", WHOLE_REQUEST_WORKER,
    ]  # fmt: skip
    return [*command, "--access-logfile", "-"] if access_log else command


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def start_site(
    env: dict[str, str], *, workers: int, timeout: float = 60.0, app: str = "strongroom.wsgi"
) -> tuple[subprocess.Popen[bytes], str]:
    """collectstatic (unless the collected files are current), then gunicorn on a free port;
    returns once /healthz answers 200."""
    static_collect(env)
    port = free_port()
    base = f"http://{LOOPBACK}:{port}"
    process = subprocess.Popen(
        gunicorn_command(bind=f"{LOOPBACK}:{port}", workers=workers, app=app),
        cwd=ROOT,
        env=env,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {process.returncode}")
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2) as answer:  # noqa: S310
                if answer.status == 200:
                    return process, base
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"the site did not answer within {timeout:.0f} s")


def fetch(
    base: str, path: str, *, method: str = "GET", cookie: str = "", body: str = "",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], str]:  # fmt: skip
    """One request without following redirects: status, headers (lower-case), text."""
    parsed = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(parsed.hostname or LOOPBACK, parsed.port, timeout=120)
    sent = {**(headers or {})}
    if cookie:
        sent["Cookie"] = cookie
    if body:
        sent["Content-Type"] = "application/x-www-form-urlencoded"
    conn.request(method, path, body=body.encode() if body else None, headers=sent)
    response = conn.getresponse()
    text = response.read().decode("utf-8", "replace")
    found = {name.lower(): value for name, value in response.getheaders()}
    found["set-cookie"] = "\n".join(response.headers.get_all("Set-Cookie") or [])
    conn.close()
    return response.status, found, text


def group_alive(group: int) -> bool:
    """Whether a process of process group `group` still runs (zombies, which an init that
    does not reap may leave, do not count). Reads /proc where there is one; elsewhere asks
    the kernel, which counts zombies too."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return False
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # it ended while we looked
        if len(fields) > 2 and fields[2] == str(group) and fields[0] not in ("Z", "X"):
            return True
    return False


def group_stop(group: int, *, timeout_s: float) -> None:
    """Stop what is left of the site's process group and wait for it: the workers a master
    killed with -9 leaves behind run on until they notice, and one still sending mail, or
    still able to start the embedded store again, must end before the store does. SIGTERM
    (a worker's graceful stop), then after `timeout_s` SIGKILL."""
    deadline = time.monotonic() + timeout_s
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    while group_alive(group):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
            return
        time.sleep(0.05)
