"""Durable calls: server-side function calls (and plain writes) followed by WAITAOF (and WAIT
under "aof+replica") in one round trip per primary, on one server or a cluster (following
MOVED / ASK, TRYAGAIN and failovers)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from redis.cluster import RedisCluster
from redis.exceptions import AskError, MovedError, SlotNotCoveredError

from strongroom import keyspace as ks
from strongroom.libraries import with_functions
from strongroom.store import (
    UNAVAILABLE,
    StoreUnavailable,
    _cluster,
    is_cluster,
    primaries,
    topology_refresh,
)

# WAITAOF's own timeout stays below the command timeout (`strongroom.store.COMMAND_TIMEOUT_S`),
# so a slow fsync is reported as "not confirmed" rather than as an outage.
WAITAOF_TIMEOUT_MS = 1000
# How often a durable call on a cluster is sent again after a redirection, a lost connection
# or TRYAGAIN (each time on a freshly read topology), and the pause before each new attempt.
CLUSTER_ATTEMPTS = 4
CLUSTER_BACKOFF_S = (0.05, 0.2, 0.4)

# Under aof+replica, whether a primary has a replica following it is asked at most this often
# (INFO replication, per process and primary), before writes are sent to it.
REPLICA_CHECK_S = 1.0
_replicas_seen: dict[str, tuple[float, bool]] = {}

_WAITAOF_ATTRIBUTE = "_strongroom_waitaof"
_LEVEL_ATTRIBUTE = "_strongroom_durability"
_APPENDFSYNC_ATTRIBUTE = "_strongroom_appendfsync_always"


def waitaof_supported(client: redis.Redis) -> bool:
    """Whether the server has WAITAOF (Redis 7.2+, Valkey 8+); asked once per connection pool
    (once per client on a cluster, whose nodes all run one version).

    The answer is kept on the pool, so one process talking to two servers (say Valkey 8 and
    Redis 7.0) gets each server's own answer.
    """
    holder: object = client if is_cluster(client) else client.connection_pool
    known: bool | None = getattr(holder, _WAITAOF_ATTRIBUTE, None)
    if known is None:
        try:
            primaries(client)[0].execute_command("WAITAOF", 0, 0, 1)
            known = True
        except redis.ResponseError:
            known = False
        setattr(holder, _WAITAOF_ATTRIBUTE, known)
    return known


def appendfsync_always(client: redis.Redis) -> bool:
    """Whether the server (one server) writes every write to its disk before it answers
    (`appendonly yes`, `appendfsync always`): then a WAITAOF 1 0 after a write answers at once.
    Asked once per connection pool; a server that does not say (CONFIG refused) counts as not."""
    holder = client.connection_pool
    known: bool | None = getattr(holder, _APPENDFSYNC_ATTRIBUTE, None)
    if known is None:
        try:
            config = client.config_get("append*")
            known = config.get("appendonly") == "yes" and config.get("appendfsync") == "always"
        except redis.RedisError:
            known = False
        setattr(holder, _APPENDFSYNC_ATTRIBUTE, known)
    return known


def durability(client: redis.Redis) -> str:
    """STRONGROOM_DURABILITY, or when unset: "aof+replica" on a cluster with replicas, else
    "aof". Decided once per client (kept on it), from the cluster's own list of its nodes."""
    chosen: str = settings.STRONGROOM_DURABILITY
    if chosen:
        return chosen
    if not is_cluster(client):
        return "aof"
    known: str | None = getattr(client, _LEVEL_ATTRIBUTE, None)
    if known is None:
        known = "aof+replica" if _has_replicas(client) else "aof"
        setattr(client, _LEVEL_ATTRIBUTE, known)
    return known


def _has_replicas(client: redis.Redis) -> bool:
    """Whether the cluster has replicas: from CLUSTER NODES, which lists every node it knows,
    failed ones too. Not from the client's slot map: CLUSTER SLOTS leaves out a replica that
    is failing or has not yet told its offset (one just synced), so a level read from it
    could fall to "aof" while such a replica may still be promoted (measured: a test's write
    was confirmed with its replica stopped, under load, right after the cluster formed)."""
    reply = primaries(client)[0].execute_command("CLUSTER", "NODES")
    text = reply.decode() if isinstance(reply, bytes) else str(reply)
    flags = [line.split()[2].split(",") for line in text.splitlines() if line.strip()]
    return any({"slave", "replica"} & set(node) for node in flags)


class WritesPaused(StoreUnavailable):
    """Under aof+replica, a primary the writes would go to has no replica following it (it was
    one until a failover a moment ago, and the failed node is not back): nothing could confirm
    them, so nothing was sent. Its rooms take changes again once a replica follows it."""


def _replica_follows(node: Any) -> bool:
    """Whether a replica follows the primary `node`, as it said within REPLICA_CHECK_S; True
    when it does not answer (a failover under way: the batch's own retries deal with it)."""
    now = time.monotonic()
    seen = _replicas_seen.get(node.name)
    if seen is not None and now - seen[0] < REPLICA_CHECK_S:
        return seen[1]
    try:
        info = node.redis_connection.info("replication")
    except UNAVAILABLE:
        return True
    follows = int(info.get("connected_slaves", 0)) > 0
    _replicas_seen[node.name] = (now, follows)
    return follows


def primaries_unfollowed(client: redis.Redis) -> int:
    """Under aof+replica on a cluster, how many primaries no replica follows (writes to their
    slots are refused until one does); 0 otherwise."""
    if not is_cluster(client) or durability(client) != "aof+replica":
        return 0
    return sum(not _replica_follows(node) for node in _cluster(client).get_primaries())


class NotDurable(Exception):
    """The write happened but the server could not confirm it reached the disk (and, under
    aof+replica, a replica) in time. `results`: the calls' replies where they are known (in
    the order of the calls, None for one not known), so a caller can tell what ran."""

    def __init__(self, message: str = "", results: Sequence[Any] | None = None) -> None:
        super().__init__(message)
        self.results: list[Any] = list(results) if results is not None else []


@dataclass(frozen=True)
class Call:
    """One server-side function call: its name, its keys (one hash tag) and its arguments."""

    function: str
    keys: Sequence[str]
    args: Sequence[Any]

    @property
    def route(self) -> str:
        return self.keys[0]

    @property
    def command(self) -> tuple[Any, ...]:
        return ("FCALL", self.function, len(self.keys), *self.keys, *self.args)


@dataclass(frozen=True)
class Write:
    """One plain write command (`ZADD key ...`); `route` is its key (it has one)."""

    route: str
    command: tuple[Any, ...]


def durable_fcall(
    client: redis.Redis,
    function: str,
    keys: Sequence[str],
    args: Sequence[Any],
    *,
    timeout_ms: int = WAITAOF_TIMEOUT_MS,
    first: bool = False,
) -> Any:
    """FCALL then WAITAOF on the same connection, in one round trip.

    WAITAOF inside a script returns at once, so it follows the call in a pipeline (one
    connection, one round trip); on a cluster that connection is the one to the primary that
    owns the keys. Without WAITAOF the server must run `appendfsync always`. `first`: see
    `durable_calls`.
    """
    calls = [Call(function, keys, args)]
    return durable_calls(client, calls, timeout_ms=timeout_ms, first=first)[0]


def durable_calls(
    client: redis.Redis,
    calls: Sequence[Call | Write],
    *,
    timeout_ms: int = WAITAOF_TIMEOUT_MS,
    first: bool = False,
) -> list[Any]:
    """Several calls (or plain writes), each confirmed durable: one round trip per primary
    they reach, every primary written to with its own WAITAOF after its commands.

    Raises NotDurable when a primary could not confirm in time (its commands did run, and the
    other primaries' were sent all the same); the first error reply is raised as such.
    Commands are sent again after a redirection or a lost connection, so each must be
    idempotent (client-made ids).

    `first`: the first write of what a person asked for (a claim, a cancel, a move's first
    step, a pickup): under aof+replica on a cluster, refused unsent (WritesPaused) when a primary
    it goes to has no replica following it. Later writes of a request (a move's next steps, the
    index entries after a claim) go as ever and raise NotDurable: something was done."""
    if not calls:
        return []  # nothing written, nothing to wait for (and no slot for a fence)
    wait = _wait_commands(client, timeout_ms)
    if not is_cluster(client):
        return _durable_batch(client, client, calls, wait, fence=_fence(client, None))
    groups: dict[str, list[int]] = {}
    nodes = {}
    for index, call in enumerate(calls):
        node = _cluster(client).get_node_from_key(call.route)
        groups.setdefault(node.name, []).append(index)
        nodes[node.name] = node
    # A write no replica could confirm would hang between done and not done ("not confirmed
    # yet") until one follows again, its slots taken meanwhile: refused before it is sent.
    if first and wait is not None and wait[0][0] == "WAIT":
        for name, node in nodes.items():
            if not _replica_follows(node):
                raise WritesPaused(f"no replica follows {name}: nothing sent")
    results: list[Any] = [None] * len(calls)
    # Every primary gets its commands even when one before it could not confirm its own: they
    # ran there (NotDurable), so the others' run too, and the caller learns it once, at the end
    # (an index written on a sound primary is read at once, whatever happened on another).
    unconfirmed: NotDurable | None = None
    for indexes in groups.values():
        batch = [calls[i] for i in indexes]
        try:
            replies = _cluster_batch(client, batch, wait)
        except NotDurable as exc:
            unconfirmed = unconfirmed or exc
            replies = exc.results or [None] * len(indexes)
        for index, result in zip(indexes, replies, strict=True):
            results[index] = result
    if unconfirmed is not None:
        raise NotDurable(str(unconfirmed), results)
    return results


Wait = tuple[tuple[Any, ...], ...]


def _wait_commands(client: redis.Redis, timeout_ms: int) -> Wait | None:
    """What follows the writes: nothing ("none", or no WAITAOF), WAITAOF 1 0 ("aof"), or WAIT 1
    then WAITAOF 1 1 ("aof+replica").

    A replica reports its fsynced offset when the primary asks (GETACK, sent when a client
    starts waiting) or once a second; asked together with the write it has not fsynced it yet,
    so WAITAOF 1 1 alone waits about a second (measured). WAIT 1 first makes the primary ask
    once more after the replica's fsync: about 8 ms instead of 1,000 (bench/cluster.py).
    """
    level = durability(client)
    if level == "none" or not waitaof_supported(client):
        return None
    if level == "aof+replica":
        return (("WAIT", 1, timeout_ms), ("WAITAOF", 1, 1, timeout_ms))
    return (("WAITAOF", 1, 0, timeout_ms),)


def _durable_batch(
    client: redis.Redis,
    node: redis.Redis,
    calls: Sequence[Call | Write],
    wait: Wait | None,
    *,
    fence: str,
    asking: bool = False,
) -> list[Any]:
    """The commands, then the fence and WAITAOF (unless `wait` is None), in one pipeline on
    `node` (the server, or one primary; `fence` a key that node serves, `_fence`)."""

    # The fence: a write that always happens (set, then deleted), after the calls. WAITAOF and
    # WAIT wait for this connection's last write; a call that finds its own earlier success
    # (a retry, perhaps from another process) writes nothing, so on a new connection they would
    # answer at once, whether or not the earlier write reached the disk or a replica. It needs
    # no ASKING: its slot is one the node serves, not the calls' (which may be migrating).
    fenced = [("SET", fence, "1"), ("DEL", fence)] if wait is not None else []

    def send() -> list[Any]:
        pipe = node.pipeline(transaction=False)
        for call in calls:
            if asking:
                pipe.execute_command("ASKING")
            pipe.execute_command(*call.command)
        for command in fenced:
            pipe.execute_command(*command)
        for command in wait or ():
            pipe.execute_command(*command)
        replies = pipe.execute(raise_on_error=False)
        waited = [replies.pop() for _ in wait or ()]
        synced = waited[0] if waited else None  # the last command: WAITAOF
        fence_replies = [replies.pop() for _ in fenced]
        # Under ASK every call follows its own ASKING (whose OK is skipped here).
        results = replies[1::2] if asking else replies
        error = next((r for r in results if isinstance(r, Exception)), None)
        if error is not None:
            raise error
        # The calls ran. A fence whose slot moved (the topology read is old): read it again and
        # send the batch again (its calls find their own success). One whose slot is migrating
        # right now: not confirmed (following ASK would send the calls to the other node).
        fence_error = next((r for r in fence_replies if isinstance(r, Exception)), None)
        if isinstance(fence_error, MovedError):
            raise fence_error
        if fence_error is not None:
            raise NotDurable(f"{calls[0].command[:2]}: fence refused ({fence_error})", results)
        failed = next((w for w in waited if isinstance(w, Exception)), None)
        if failed is not None:
            raise failed
        if (
            wait is not None
            and synced is not None
            and (int(synced[0]) < 1 or int(synced[1]) < wait[-1][2])
        ):
            raise NotDurable(str(calls[0].command[:2]), results)
        return list(results)

    return with_functions(client, send)


_FENCE_ATTRIBUTE = "_strongroom_fences"
_FENCE_TRIES = 100_000


def _fence(client: redis.Redis, node_name: str | None) -> str:
    """The fence key of a batch: on one server any (n=0); on a cluster one in a slot that the
    primary `node_name` serves, so it goes on the batch's connection whatever the calls' slot
    is doing (a migrating slot answers ASK for a key it lacks). The first n that fits, kept per
    client and primary while the client's topology still has that primary serve it."""
    if node_name is None or not is_cluster(client):
        return ks.DURABLE_FENCE.key(n=0)
    cluster = _cluster(client)
    kept: dict[str, str] = getattr(client, _FENCE_ATTRIBUTE, None) or {}
    setattr(client, _FENCE_ATTRIBUTE, kept)
    known = kept.get(node_name)
    if known is not None and _serves(cluster, known, node_name):
        return known
    for n in range(_FENCE_TRIES):
        key = ks.DURABLE_FENCE.key(n=n)
        if _serves(cluster, key, node_name):
            kept[node_name] = key
            return key
    raise SlotNotCoveredError(f"no slot of {node_name} in the client's topology")


def _serves(cluster: RedisCluster, key: str, node_name: str) -> bool:
    try:
        return bool(cluster.get_node_from_key(key).name == node_name)
    except SlotNotCoveredError:
        return False


def _cluster_batch(
    client: redis.Redis, calls: Sequence[Call | Write], wait: Wait | None
) -> list[Any]:
    """`_durable_batch` on the primary that owns the commands' keys, following the cluster
    through MOVED / ASK, TRYAGAIN, a lost primary and a failover."""
    cluster = _cluster(client)
    ask_node: tuple[str, int] | None = None
    for attempt in range(CLUSTER_ATTEMPTS):
        last = attempt == CLUSTER_ATTEMPTS - 1
        try:
            if ask_node is not None:
                found = cluster.get_node(host=ask_node[0], port=ask_node[1])
                if found is None:
                    raise SlotNotCoveredError(f"no node at {ask_node}")
                node = found
            else:
                node = cluster.get_node_from_key(calls[0].route)
            return _durable_batch(
                client, node.redis_connection, calls, wait,
                asking=ask_node is not None, fence=_fence(client, node.name),
            )  # fmt: skip
        except MovedError:
            if last:
                raise
            ask_node = None
            topology_refresh(client)
        except AskError as exc:
            if last:
                raise
            ask_node = exc.node_addr
            continue
        except (*UNAVAILABLE, redis.ReadOnlyError):
            # A lost primary, a failover under way, TRYAGAIN: wait, read the topology, retry.
            if last:
                raise
            ask_node = None
            time.sleep(CLUSTER_BACKOFF_S[min(attempt, len(CLUSTER_BACKOFF_S) - 1)])
            with contextlib.suppress(StoreUnavailable):
                topology_refresh(client)
    raise AssertionError("unreachable")
