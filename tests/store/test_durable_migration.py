"""A durable call on a slot being migrated (resharding: MIGRATING on its owner, IMPORTING on
the next): a call whose keys are all still on the owner runs there and is confirmed (its fence
is in a slot the owner serves, not in the migrating one), and nothing of it is written on the
importing node (a copy there would split the key in two and stop the migration: MIGRATE
answers BUSYKEY)."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from strongroom.durable import NotDurable, Write, _fence, durable_calls, durable_fcall
from strongroom.embedded_cluster import LocalCluster
from tests.store.test_cluster import cluster, on_cluster  # noqa: F401

pytestmark = pytest.mark.store


def test_a_call_on_a_migrating_slot_runs_on_its_owner_only(
    cluster: LocalCluster,  # noqa: F811
    on_cluster: redis.Redis,  # noqa: F811
) -> None:
    person = "sr:{person:5}:person"
    args = ["Five", "five", "hash", 0, 1, "token-5"]
    assert durable_fcall(on_cluster, "accounts_person_create", [person], args) == "ok"
    slot = on_cluster.execute_command("CLUSTER", "KEYSLOT", person)
    owner = on_cluster.get_node_from_key(person)  # type: ignore[attr-defined]
    target = next(n for n in on_cluster.get_primaries() if n.name != owner.name)  # type: ignore[attr-defined]
    source_conn = owner.redis_connection
    target_conn = target.redis_connection
    source_id = source_conn.execute_command("CLUSTER", "MYID")
    target_id = target_conn.execute_command("CLUSTER", "MYID")
    target_conn.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
    source_conn.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
    try:
        # The same call again (a retry): it finds its own success on the owner and is
        # confirmed there; never run on the importing node.
        assert durable_fcall(on_cluster, "accounts_person_create", [person], args) == "ok"
        assert target_conn.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
        assert source_conn.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 1
    finally:
        for conn in (target_conn, source_conn):
            conn.execute_command("CLUSTER", "SETSLOT", slot, "STABLE")


def test_a_new_key_on_a_migrating_slot_follows_ask_with_its_fence(
    cluster: LocalCluster,  # noqa: F811
    on_cluster: redis.Redis,  # noqa: F811
) -> None:
    """Keys the owner no longer has (or never had) are sent to the importing node with ASKING
    before each call (its fence is one of the importing node's own slots): the replies line up,
    the fence is gone after."""
    person = "sr:{person:6}:person"
    scores = "sr:{person:6}:priority"
    slot = on_cluster.execute_command("CLUSTER", "KEYSLOT", person)
    owner = on_cluster.get_node_from_key(person)  # type: ignore[attr-defined]
    target = next(n for n in on_cluster.get_primaries() if n.name != owner.name)  # type: ignore[attr-defined]
    source_conn, target_conn = owner.redis_connection, target.redis_connection
    source_id = source_conn.execute_command("CLUSTER", "MYID")
    target_id = target_conn.execute_command("CLUSTER", "MYID")
    target_conn.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
    source_conn.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
    try:
        args = ["Six", "six", "hash", 0, 1, "token-6"]
        assert durable_fcall(on_cluster, "accounts_person_create", [person], args) == "ok"
        replies = durable_calls(
            on_cluster,
            [Write(scores, ("ZADD", scores, 1, "a")), Write(scores, ("ZADD", scores, 2, "b"))],
        )
        assert replies == [1, 1]
        assert target_conn.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 2
        assert source_conn.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
    finally:
        for conn in (target_conn, source_conn):
            conn.execute_command("CLUSTER", "SETSLOT", slot, "STABLE")


def _fence_slot_to(client: redis.Redis, person: str, state: str) -> tuple[int, Any, Any]:
    """The slot of the fence the owner of `person` uses, set to `state` ("moved": given to
    another primary on every node; "migrating": MIGRATING there, IMPORTING on another), behind
    the client's back (its topology still has the owner serve it). Returns (slot, owner, other)."""
    owner = client.get_node_from_key(person)  # type: ignore[attr-defined]
    other = next(n for n in client.get_primaries() if n.name != owner.name)  # type: ignore[attr-defined]
    slot = client.execute_command("CLUSTER", "KEYSLOT", _fence(client, owner.name))
    other_id = other.redis_connection.execute_command("CLUSTER", "MYID")
    owner_id = owner.redis_connection.execute_command("CLUSTER", "MYID")
    if state == "moved":
        for node in client.get_nodes():  # type: ignore[attr-defined]
            if node.server_type == "primary":
                node.redis_connection.execute_command("CLUSTER", "SETSLOT", slot, "NODE", other_id)
    else:
        other.redis_connection.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", owner_id)
        owner.redis_connection.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", other_id)
    return slot, owner, other


def test_a_fence_whose_slot_moved_reads_the_topology_again_and_confirms(
    cluster: LocalCluster,  # noqa: F811
    on_cluster: redis.Redis,  # noqa: F811
) -> None:
    person = "sr:{person:3}:person"
    args = ["Three", "three", "hash", 0, 1, "token-3"]
    slot, owner, other = _fence_slot_to(on_cluster, person, "moved")
    assert durable_fcall(on_cluster, "accounts_person_create", [person], args) == "ok"
    # The fence now in use is one the owner serves by the topology read again.
    fence = _fence(on_cluster, owner.name)
    assert on_cluster.execute_command("CLUSTER", "KEYSLOT", fence) != slot
    assert on_cluster.get_node_from_key(fence).name == owner.name  # type: ignore[attr-defined]
    assert other.redis_connection.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0


def test_a_fence_whose_slot_is_migrating_leaves_the_call_unconfirmed_and_run_once(
    cluster: LocalCluster,  # noqa: F811
    on_cluster: redis.Redis,  # noqa: F811
) -> None:
    person = "sr:{person:4}:person"
    args = ["Four", "four", "hash", 0, 1, "token-4"]
    slot, owner, other = _fence_slot_to(on_cluster, person, "migrating")
    try:
        with pytest.raises(NotDurable):
            durable_fcall(on_cluster, "accounts_person_create", [person], args)
        # The call ran on its owner, once; nothing went on to the importing node.
        assert owner.redis_connection.exists(person) == 1
        assert other.redis_connection.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
    finally:
        for node in (other, owner):
            node.redis_connection.execute_command("CLUSTER", "SETSLOT", slot, "STABLE")
    assert durable_fcall(on_cluster, "accounts_person_create", [person], args) == "ok"
