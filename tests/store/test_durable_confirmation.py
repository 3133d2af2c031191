"""What "confirmed" waits for, where it could quietly wait for less.

A retried durable call that finds its own earlier success is confirmed only once that success
is where the durability level wants it: WAITAOF and WAIT wait for the connection's own last
write, so the call is followed by a write that always happens (the fence, set and deleted).
Without it, the retry on a fresh connection was confirmed at once with the replica stopped.

And the level itself ("aof+replica" on a cluster with replicas) does not fall to "aof" when the
client's slot map lacks the replicas (CLUSTER SLOTS leaves out failing replicas and ones that
have not told their offset yet)."""

from __future__ import annotations

import os
import signal
import time

import pytest
import redis

from strongroom.durable import NotDurable, durability, durable_calls, durable_fcall
from strongroom.embedded_cluster import LocalCluster
from strongroom.keyspace import DURABLE_FENCE, family_of
from strongroom.store import _cluster, connect
from tests.store.test_cluster import cluster, on_cluster  # noqa: F401
from tests.store_support import replica_of

pytestmark = pytest.mark.store


def test_the_fence_is_a_known_key_and_gone_after_the_call(r: redis.Redis) -> None:
    person = "sr:{person:9}:person"
    assert durable_fcall(r, "accounts_person_create", [person], ["N", "n", "h", 0, 1, "t"]) == "ok"
    assert family_of(DURABLE_FENCE.key(n=0)) is DURABLE_FENCE
    assert not [k for k in r.scan_iter(count=1000) if family_of(k) is DURABLE_FENCE]


def test_each_primary_has_a_fence_in_a_slot_it_serves(
    cluster: LocalCluster,  # noqa: F811
    on_cluster: redis.Redis,  # noqa: F811
) -> None:
    """The fence goes on the batch's own connection, whatever the calls' slot is doing."""
    from strongroom.durable import _fence

    for node in on_cluster.get_primaries():  # type: ignore[attr-defined]
        fence = _fence(on_cluster, node.name)
        assert on_cluster.get_node_from_key(fence).name == node.name  # type: ignore[attr-defined]
        assert _fence(on_cluster, node.name) == fence  # kept


def test_a_retry_on_a_new_connection_is_not_confirmed_while_the_replica_is_away(
    cluster: LocalCluster,  # noqa: F811
    on_cluster: redis.Redis,  # noqa: F811
) -> None:
    person = "sr:{person:9}:person"
    owner = on_cluster.get_node_from_key(person)  # type: ignore[attr-defined]
    pid = replica_of(cluster, on_cluster, person).pid()
    assert pid is not None
    args = ["Nine", "nine", "hash", 0, 1, "token-9"]
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(NotDurable):
            durable_fcall(on_cluster, "accounts_person_create", [person], args, timeout_ms=300)
        # The retry comes on a connection that wrote nothing yet (another process, or this one
        # after a lost reply): the function finds its own success and writes nothing itself.
        owner.redis_connection.connection_pool.disconnect()
        with pytest.raises(NotDurable):
            durable_fcall(on_cluster, "accounts_person_create", [person], args, timeout_ms=300)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert durable_fcall(on_cluster, "accounts_person_create", [person], args) == "ok"
    assert not [k for k in on_cluster.scan_iter(count=1000) if family_of(k) is DURABLE_FENCE]


def test_replicas_missing_from_the_slot_map_do_not_lower_the_level(cluster: LocalCluster) -> None:  # noqa: F811
    pids = [node.pid() for node in cluster.replicas]
    assert all(pids)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)  # type: ignore[arg-type]
    try:
        time.sleep(2.5)  # past the node timeout (1 s): the primaries mark them failed
        client = connect(cluster.url)
        try:
            assert _cluster(client).get_replicas() == [], "CLUSTER SLOTS leaves them out"
            assert durability(client) == "aof+replica"
            with pytest.raises(NotDurable):
                durable_fcall(
                    client, "accounts_person_create", ["sr:{person:7}:person"],
                    ["Seven", "seven", "hash", 0, 1, "token-7"], timeout_ms=300,
                )  # fmt: skip
        finally:
            client.close()
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)  # type: ignore[arg-type]


def test_no_calls_is_no_round_trip_and_no_error(r: redis.Redis) -> None:
    """An empty batch (a caller whose list came out empty) has no slot for a fence: nothing."""
    assert durable_calls(r, []) == []


def test_a_primary_that_cannot_confirm_does_not_keep_the_others_from_their_writes(
    cluster: LocalCluster,  # noqa: F811
    on_cluster: redis.Redis,  # noqa: F811
) -> None:
    """Three primaries written in one durable call, the first without its replica: it raises
    NotDurable, and the other two have their writes all the same (an index entry written on a
    sound primary is listed at once; before, the primaries after the failing one got nothing)."""
    from strongroom.durable import Write

    keys: dict[int, str] = {}
    for n in range(200):
        key = f"sr:{{probe:{n}}}:k"
        keys.setdefault(on_cluster.get_node_from_key(key).port, key)  # type: ignore[attr-defined]
    assert len(keys) == 3
    first, *others = keys.values()
    pid = replica_of(cluster, on_cluster, first).pid()
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(NotDurable):
            durable_calls(
                on_cluster, [Write(k, ("SET", k, "1")) for k in (first, *others)], timeout_ms=300
            )
    finally:
        os.kill(pid, signal.SIGCONT)
    assert [on_cluster.get(k) for k in (first, *others)] == ["1", "1", "1"]
