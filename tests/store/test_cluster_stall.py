"""A stopped primary of a real 3-primary Valkey Cluster (SIGSTOP: alive, its socket open,
answering nothing) is asked once for everyone, as a stalled single server is
(strongroom/stall.py): each node's pool has its own gate, so after one command to it has timed
out the others fail after a shared probe instead of waiting out redis-py's timeouts and retries
each, while the other primaries answer as before."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from strongroom import embedded_cluster
from strongroom.embedded_cluster import LocalCluster
from strongroom.stall import StallGate, StoreSeemsStalled
from strongroom.store import connect
from tests.store.test_store_stall_probe import errors_of_askers

ASKERS = 8
# Each command is tried three times by the cluster client (strongroom.store: retries=2).
TRIES = 3


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    """Three primaries and no replica: a stopped primary stays the primary (no failover), and
    the others call it failed (and the cluster down) only after the usual 15 s node timeout."""
    running = embedded_cluster.cluster_start(
        tmp_path / "cluster", primaries=3, replicas=0, node_timeout_ms=15_000
    )
    yield running
    running.stop()


def _key_on(client: redis.Redis, node_name: str, *, other: bool = False) -> str:
    """A key whose slot `node_name` serves (with `other`: one it does not serve)."""
    for n in range(10_000):
        key = f"sr:test:stall:{n}"
        on_node = client.get_node_from_key(key).name == node_name  # type: ignore[attr-defined]
        if on_node != other:
            return key
    raise AssertionError("no such key")


def _gate(client: redis.Redis, key: str) -> StallGate:
    node = client.get_node_from_key(key)  # type: ignore[attr-defined]
    gate: StallGate = node.redis_connection.connection_pool.stall_gate
    return gate


def test_a_stopped_primary_is_probed_once_for_everyone_and_the_others_answer(
    cluster: LocalCluster,
) -> None:
    client = connect(cluster.url)
    stopped = cluster.nodes[0]
    name = f"127.0.0.1:{stopped.port}"
    there, elsewhere = _key_on(client, name), _key_on(client, name, other=True)
    client.set(there, "kept")
    client.set(elsewhere, "also")
    pid = stopped.pid()
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        # The first command cannot know: it times out (then its retries meet the gate).
        with pytest.raises(redis.TimeoutError):
            client.get(there)
        gate = _gate(client, there)
        assert gate.stalled
        # The next ones, all at once: refused by the gate, none sent to wait on its own; the
        # probes they share are fewer than the tries they would each have sent.
        probes = gate.probes_sent
        errors = errors_of_askers(client, ASKERS, there)
        assert len(errors) == ASKERS
        assert all(isinstance(error, StoreSeemsStalled) for error in errors), errors
        assert gate.probes_sent - probes < ASKERS * TRIES
        # Another primary's keys answer meanwhile: its gate knows nothing of this one's stall.
        assert client.get(elsewhere) == "also"
        assert not _gate(client, elsewhere).stalled
    finally:
        os.kill(pid, signal.SIGCONT)
    # Continued: the next command's probe is answered, and so is the command.
    assert client.get(there) == "kept"
    assert not _gate(client, there).stalled
    client.close()
