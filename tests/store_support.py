"""Reading the store's own figures the same way on one server and on a cluster.

Round trips are counted per node: a pipeline costs one round trip for each primary it reaches
(`strongroom.store.primaries_reached`), so a test states its count from the keys it touches.
A server's INFO figures (commands run, keys changed) are summed over every primary.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import redis
from django.conf import settings
from django.test import Client

from accounts.sessions import session_key_person_id
from booking.domain.keys import RoomKeys, date_index, person_index
from strongroom import embedded
from strongroom.durable import appendfsync_always, waitaof_supported
from strongroom.embedded_cluster import ClusterNodeProcess, LocalCluster
from strongroom.keyspace import PERSON, SESSION
from strongroom.store import is_cluster, primaries, primaries_reached, tags_may_mix


def identity_trips(r: redis.Redis, client: Client) -> int:
    """The round trips of a signed-in request's identity: the session and the person its key
    names, read in one pipeline (1 on one server; 1 or 2 on a cluster, as their tags fall)."""
    return session_trips(r, client.cookies[settings.SESSION_COOKIE_NAME].value)


def session_trips(r: redis.Redis, session_key: str | None) -> int:
    """The round trips of reading a session (with the person its key names, if any)."""
    if not session_key:
        return 0
    keys = [SESSION.key(session_key=session_key)]
    person_id = session_key_person_id(session_key)
    if person_id is not None:
        keys.append(PERSON.key(person_id=person_id))
    return primaries_reached(r, keys)


def commands_run(r: redis.Redis) -> Counter[str]:
    """Calls per command (`cmdstat_get` -> `get`), summed over every primary."""
    calls: Counter[str] = Counter()
    for node in primaries(r):
        for name, stats in node.info("commandstats").items():
            calls[name.removeprefix("cmdstat_")] += int(stats["calls"])
    return calls


def keys_changed(r: redis.Redis) -> int:
    """The store's count of key changes (every write, also inside functions) over every
    primary."""
    return sum(
        int(node.info("persistence")["rdb_changes_since_last_save"]) for node in primaries(r)
    )


def stats_reset(r: redis.Redis) -> None:
    """Set every primary's command counts back to zero (CONFIG RESETSTAT on each)."""
    for node in primaries(r):
        node.config_resetstat()


def keys_stored(r: redis.Redis) -> list[str]:
    """Every key in the store, from every primary (SCAN on each)."""
    return [str(key) for node in primaries(r) for key in node.scan_iter(count=1000)]


def rooms_trips(r: redis.Redis, rooms: Iterable[int]) -> int:
    """The round trips of one pipeline over these rooms' keys (each room is its own tag)."""
    return primaries_reached(r, [RoomKeys(room).holds for room in rooms])


def claim_trips(r: redis.Redis, *, owner_id: str, room: int) -> int:
    """The round trips of a claim where the claim function cannot write the indexes itself
    (cluster mode): FCALL + WAITAOF in one pipeline, the index pipeline (the owner's index and
    the room's date shard: one round trip per primary they are on) and, on a cluster, the ZREM
    from the room's `unindexed` set after the entries are written."""
    index_write = primaries_reached(r, [person_index(owner_id), date_index(room)])
    return 1 + index_write + (1 if is_cluster(r) else 0)


def store_probed(r: redis.Redis) -> None:
    """Ask what the site asks of a store once per client (is it in cluster mode, has it
    WAITAOF, does one server write to disk before it answers), so that a counted block run
    first in a session counts its own round trips only."""
    if tags_may_mix(r):
        appendfsync_always(r)
    waitaof_supported(r)


def kill_and_restart(data_dir: Path) -> None:
    """`kill -9` the embedded store of `data_dir`, wait until it is gone, start it again."""
    pid = embedded.server_pid(data_dir)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    embedded.ensure_running(data_dir)


def replica_of(cluster: LocalCluster, client: redis.Redis, key: str) -> ClusterNodeProcess:
    """The replica of the primary that serves `key` (`client`: a cluster client)."""
    primary = client.get_node_from_key(key)  # type: ignore[attr-defined]
    return next(
        node
        for node in cluster.replicas
        if node.client().info("replication")["master_port"] == primary.port
    )
