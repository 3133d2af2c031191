"""The connection to the store: the clients, the cluster topology, health and round trips.

Also the loading of the function libraries; their calls are `strongroom.libraries`, durable
calls `strongroom.durable`, replies as text `strongroom.decoders`.

Every module takes the client as a parameter; `get_store()` is where views get it from. The
store is one server (redis://, rediss://, unix://, or the embedded Valkey) or a Redis / Valkey
Cluster (redis+cluster://): then the client is redis-py's RedisCluster, which has the same
command API and is typed as `redis.Redis` so that every domain function keeps one signature.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import quote

import redis
from django.conf import settings
from redis._parsers.commands import CommandsParser
from redis.backoff import ExponentialWithJitterBackoff
from redis.cluster import ClusterNode, LoadBalancingStrategy, RedisCluster
from redis.exceptions import (
    ClusterDownError,
    ClusterError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.retry import Retry

from strongroom import embedded
from strongroom.conf import cluster_url_parse, is_cluster_url
from strongroom.connections import (
    COUNTING,
    CountingConnection,
    CountingSSLConnection,
    RoundTrips,
)
from strongroom.lua_sources import function_sources, library_text
from strongroom.stall import GatedConnectionPool

# How long a command may wait for an answer: a stalled store (SIGSTOP, a stuck disk) gets the
# 503 page within about this long instead of holding the worker (`strongroom.durable`'s
# WAITAOF timeout stays below it). Once one command has timed out, the requests after it wait
# only for one shared probe (`strongroom.stall`), not for a timeout each.
COMMAND_TIMEOUT_S = 1.5

# Errors that mean "the store is not there right now", as opposed to a bug: on a cluster also
# a cluster that is down, a slot without a primary (during a failover), TRYAGAIN (a slot on
# the move) and redis-py giving up after its own retries.
UNAVAILABLE = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.BusyLoadingError,
    ClusterDownError,
    ClusterError,
    SlotNotCoveredError,
    TryAgainError,
)


class StoreUnavailable(Exception):
    """The store did not answer; pages show the 503 page."""


class ClusterUnreachable(redis.ConnectionError):
    """No seed or node of the cluster answered while the topology was read again."""


_lock = threading.Lock()
_client: redis.Redis | None = None
_reader: redis.Redis | None = None
_last_restart = 0.0
_connect_checks: list[Callable[[redis.Redis], None]] = []


def is_embedded() -> bool:
    return settings.REDIS_URL is None


def _ensure_embedded() -> str:
    return embedded.ensure_running(
        settings.STRONGROOM_DATA_DIR, appendfsync=settings.STRONGROOM_EMBEDDED_APPENDFSYNC
    )


def store_url() -> str:
    """REDIS_URL, or the embedded server's URL (starting it if need be)."""
    if settings.REDIS_URL:
        return settings.REDIS_URL
    return _ensure_embedded()


def connect(url: str) -> redis.Redis:
    """A client for `url` whose connections count round trips (a cluster client for
    redis+cluster:// and rediss+cluster:// URLs)."""
    if is_cluster_url(url):
        return _connect_cluster(url)
    # Gated: once a command times out, one probe asks the store for every request
    # (strongroom/stall.py), rather than each request waiting out a timeout of its own.
    pool = GatedConnectionPool.from_url(
        url,
        decode_responses=True,
        socket_timeout=COMMAND_TIMEOUT_S,
        socket_connect_timeout=COMMAND_TIMEOUT_S,
        max_connections=200,
    )
    pool.connection_class = COUNTING.get(pool.connection_class, pool.connection_class)
    return redis.Redis(connection_pool=pool)


class _FunctionKeysParser(CommandsParser):
    """Knows where FCALL's keys are (`FCALL name numkeys key...`), and XREADGROUP's and XREAD's
    (`... STREAMS key... id...`), without asking the server.

    redis-py's parser sends COMMAND GETKEYS for every command with "movable" keys, FCALL and
    the stream reads among them: one extra round trip per call, and per call in a pipeline.
    """

    def get_keys(self, redis_conn: Any, *args: Any) -> Any:
        name = str(args[0]).upper() if args else ""
        if len(args) >= 3 and name in ("FCALL", "FCALL_RO"):
            return list(args[3 : 3 + int(args[2])])
        if name in ("XREADGROUP", "XREAD"):
            words = [(a.decode() if isinstance(a, bytes) else str(a)).upper() for a in args]
            if "STREAMS" in words:
                at = words.index("STREAMS") + 1
                return list(args[at : at + (len(args) - at) // 2])
        return super().get_keys(redis_conn, *args)


def _connect_cluster(url: str, *, replica_reads: bool = False) -> redis.Redis:
    parsed = cluster_url_parse(url)
    balancing = LoadBalancingStrategy.ROUND_ROBIN_REPLICAS if replica_reads else None
    # redis-py hands a connection class to each node's pool only on its URL path: the first
    # seed goes as a URL (with the credentials and TLS), the others as extra seeds.
    (host, port), *others = parsed.seeds
    credentials = ""
    if parsed.username or parsed.password:
        credentials = quote(parsed.username or "", safe="")
        if parsed.password is not None:
            credentials += ":" + quote(parsed.password, safe="")
        credentials += "@"
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    seed = f"{'rediss' if parsed.tls else 'redis'}://{credentials}{netloc}"
    try:
        client = RedisCluster(
            url=seed,
            startup_nodes=[ClusterNode(other, other_port) for other, other_port in others],
            connection_class=CountingSSLConnection if parsed.tls else CountingConnection,
            # Each node's pool has its own stall gate (strongroom/stall.py): once a command to a
            # stopped primary has timed out, the others to it fail after one probe, not after
            # a timeout each, three times over with redis-py's retries.
            connection_pool_class=GatedConnectionPool,
            decode_responses=True,
            socket_timeout=COMMAND_TIMEOUT_S,
            socket_connect_timeout=COMMAND_TIMEOUT_S,
            max_connections=200,
            # A page should get the 503 page within a second or two of a primary's loss, not
            # after redis-py's ten-odd retries; the next request finds the new topology.
            retry=Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), retries=2),
            reinitialize_steps=1,
            load_balancing_strategy=balancing,
        )
    except RedisClusterException as exc:
        # "no reachable seed node" and the like: the store is away, not misconfigured.
        raise StoreUnavailable(str(exc)) from exc
    # Pipelines share the client's parser, so this one change covers them too.
    client.commands_parser.__class__ = _FunctionKeysParser
    _topology_errors_as_unavailable(client)
    return cast(redis.Redis, client)


def _topology_errors_as_unavailable(client: RedisCluster) -> None:
    """redis-py reports "no node reachable" (and "slots not covered") found while reading the
    topology again as RedisClusterException, the class it also uses for programming errors;
    raised as a ConnectionError instead, a command then gets the 503 page, not a 500."""
    manager = client.nodes_manager
    read_topology = manager.initialize

    def initialize(*args: Any, **kwargs: Any) -> Any:
        try:
            return read_topology(*args, **kwargs)
        except RedisClusterException as exc:
            raise ClusterUnreachable(str(exc)) from exc

    manager.initialize = initialize  # type: ignore[method-assign]


def is_cluster(client: object) -> bool:
    """Whether `client` talks to a Redis / Valkey Cluster."""
    return isinstance(client, RedisCluster)


def _cluster(client: redis.Redis) -> RedisCluster:
    return cast(RedisCluster, client)


def primaries(client: redis.Redis) -> list[redis.Redis]:
    """A plain client per primary (one: the server itself when not on a cluster)."""
    if not is_cluster(client):
        return [client]
    return [node.redis_connection for node in _cluster(client).get_primaries()]


def primaries_reached(client: redis.Redis, keys: Sequence[str]) -> int:
    """How many primaries a pipeline on these keys reaches: its round trips (1 off a cluster)."""
    if not is_cluster(client) or not keys:
        return 1 if keys else 0
    return len({_cluster(client).get_node_from_key(key).name for key in keys})


def primaries_by_slot(client: redis.Redis) -> str | None:
    """Which primary serves each slot, as the first node that answers says (CLUSTER SLOTS):
    "<first>-<last>=<node id>,..." in slot order; None off a cluster, when no node answers or
    while some slot has no primary (a failover under way)."""
    if not is_cluster(client):
        return None
    for node in _cluster(client).get_nodes():
        try:
            reply = node.redis_connection.execute_command("CLUSTER SLOTS")
        except UNAVAILABLE:
            continue
        spans = sorted((int(row[0]), int(row[1]), str(row[2][2])) for row in reply)
        if sum(last - first + 1 for first, last, _owner in spans) != 16384:
            return None
        return ",".join(f"{first}-{last}={owner}" for first, last, owner in spans)
    return None


def topology_refresh(client: redis.Redis) -> None:
    """Read the cluster's slots and nodes again (after MOVED, a lost node, a failover)."""
    if is_cluster(client):
        try:
            _cluster(client).nodes_manager.initialize()
        except (RedisClusterException, ClusterUnreachable) as exc:
            raise StoreUnavailable(str(exc)) from exc


def load_functions(client: redis.Redis) -> None:
    """Load (or replace) every function library on every primary; proves the server runs Lua.

    On a cluster each primary needs its own copy (a replica has its primary's); a primary that
    is new or took over after a failover gets them again through `fcall`'s retry.
    """
    sources = [library_text(source) for source in function_sources()]
    for node in primaries(client):
        for source in sources:
            node.function_load(source, replace=True)


def get_store() -> redis.Redis:
    """The process-wide client; the first call starts the embedded server and loads functions."""
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                try:
                    client = connect(store_url())
                except (*UNAVAILABLE, embedded.StoreStalled) as exc:
                    raise StoreUnavailable(str(exc)) from exc
                try:
                    load_functions(client)
                    for check in _connect_checks:
                        check(client)
                except BaseException as exc:
                    client.close()  # not kept: its connections go with it
                    if isinstance(exc, (*UNAVAILABLE, embedded.StoreStalled)):
                        raise StoreUnavailable(str(exc)) from exc
                    raise
                _connect_checks.clear()
                _client = client
    return _client


def check_on_connect(check: Callable[[redis.Redis], None]) -> None:
    """Run `check` on the next client get_store makes, before anything uses it (a web worker
    that started while the store did not answer runs its startup checks once the store does).
    A check that raises keeps the client from being used, and runs again on the next try."""
    with _lock:
        _connect_checks.append(check)


def get_reader() -> redis.Redis:
    """The client for reads that may lag the primary by a few milliseconds (the catalog's
    pages): on a cluster with STRONGROOM_CATALOG_REPLICA_READS, one that spreads read commands
    over each shard's replicas; otherwise the store itself. Writes and FCALL still go to the
    primary."""
    global _reader
    if not (settings.STRONGROOM_CATALOG_REPLICA_READS and is_cluster_url(settings.REDIS_URL)):
        return get_store()
    if _reader is None:
        get_store()  # functions loaded, the cluster checked
        with _lock:
            if _reader is None:
                _reader = _connect_cluster(str(settings.REDIS_URL), replica_reads=True)
    return _reader


def reset_store() -> None:
    """Forget the process-wide clients (tests, and after a fork)."""
    global _client, _reader
    with _lock:
        for client in (_client, _reader):
            if client is not None:
                client.close()
        _client = _reader = None


def recover() -> None:
    """After a store error: on a cluster, read the topology again; restart the embedded server
    if its process is gone (each at most once a second). A server whose process exists is only
    slow or stopped: it is waited for, never replaced."""
    global _last_restart
    if time.monotonic() - _last_restart < 1.0:
        return
    if _client is not None and is_cluster(_client):
        _last_restart = time.monotonic()
        with contextlib.suppress(*UNAVAILABLE, StoreUnavailable):
            topology_refresh(_client)
        return
    if not is_embedded():
        return
    _last_restart = time.monotonic()
    if embedded.live_server_pid(settings.STRONGROOM_DATA_DIR) is not None:
        return
    try:
        _ensure_embedded()
    except (OSError, RuntimeError):
        return
    client = _client
    if client is not None:
        # Functions live in the AOF, but a server restarted on empty data has none.
        try:
            load_functions(client)
        except UNAVAILABLE:
            return


@contextlib.contextmanager
def round_trips() -> Iterator[RoundTripTally]:
    """Count the store round trips made inside the block (a budget, not a timer)."""
    tally = RoundTripTally()
    start = RoundTrips.count
    try:
        yield tally
    finally:
        tally.count = RoundTrips.count - start


@dataclass
class RoundTripTally:
    count: int = 0


_TAGS_MAY_MIX_ATTRIBUTE = "_strongroom_tags_may_mix"


def tags_may_mix(client: redis.Redis) -> bool:
    """Whether one function call may name keys of different hash tags (a claim writing the
    person and date indexes itself): the server is not in cluster mode, where a call's keys
    must share a slot. Asked once per client."""
    known: bool | None = getattr(client, _TAGS_MAY_MIX_ATTRIBUTE, None)
    if known is None:
        if isinstance(client, redis.RedisCluster):
            known = False
        else:
            known = str(client.info("cluster").get("cluster_enabled", 0)) != "1"
        setattr(client, _TAGS_MAY_MIX_ATTRIBUTE, known)
    return known
