"""Starting the site with gunicorn the way production runs it, for `serve`, tests and bench."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def gunicorn_command(*, bind: str, workers: int, access_log: bool = False) -> list[str]:
    """The gunicorn command line: sync workers, settings from strongroom/gunicorn_conf.py."""
    command = [
        sys.executable, "-m", "gunicorn", "strongroom.wsgi", "--bind", bind,
        "--workers", str(workers), "--config", "python:strongroom.gunicorn_conf",
    ]  # fmt: skip
    return [*command, "--access-logfile", "-"] if access_log else command


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_site(
    env: dict[str, str], *, workers: int, timeout: float = 60.0
) -> tuple[subprocess.Popen[bytes], str]:
    """collectstatic, then gunicorn on a free port; returns once /healthz answers 200."""
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT, env=env, check=True,
    )  # fmt: skip
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        gunicorn_command(bind=f"127.0.0.1:{port}", workers=workers), cwd=ROOT, env=env
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
