"""A durable call on a slot being migrated (resharding: MIGRATING on its owner, IMPORTING on
the next): a call whose keys are all still on the owner runs there and is confirmed (its fence
is in a slot the owner serves, not in the migrating one), and nothing of it is written on the
importing node (a copy there would split the key in two and stop the migration: MIGRATE
answers BUSYKEY)."""

from __future__ import annotations

import pytest
import redis

from strongroom.durable import Write, durable_calls, durable_fcall
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
