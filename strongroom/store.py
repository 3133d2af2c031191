"""The connection to the store, the server-side function libraries, and durable calls.

Every module takes the client as a parameter; `get_store()` is where views get it from. The
store is one server (redis://, rediss://, unix://, or the embedded Valkey) or a Redis / Valkey
Cluster (redis+cluster://): then the client is redis-py's RedisCluster, which has the same
command API and is typed as `redis.Redis` so that every domain function keeps one signature.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import quote

import redis
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from redis._parsers.commands import CommandsParser
from redis.backoff import ExponentialWithJitterBackoff
from redis.cluster import ClusterNode, LoadBalancingStrategy, RedisCluster
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ClusterError,
    MovedError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.retry import Retry

from strongroom import embedded
from strongroom.conf import cluster_url_parse, is_cluster_url

T = TypeVar("T")

# How long a command may wait for an answer: a stalled store (SIGSTOP, a stuck disk) gets the
# 503 page within about this long instead of holding the worker. WAITAOF's own timeout stays
# below it, so a slow fsync is reported as "not confirmed" rather than as an outage.
COMMAND_TIMEOUT_S = 1.5
WAITAOF_TIMEOUT_MS = 1000

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
# How often a durable call on a cluster is sent again after a redirection, a lost connection
# or TRYAGAIN (each time on a freshly read topology), and the pause before each new attempt.
CLUSTER_ATTEMPTS = 4
CLUSTER_BACKOFF_S = (0.05, 0.2, 0.4)


class StoreUnavailable(Exception):
    """The store did not answer; pages show the 503 page."""


class ClusterUnreachable(redis.ConnectionError):
    """No seed or node of the cluster answered while the topology was read again."""


class RoundTrips:
    """Counts the times a request is sent to the store (one pipeline is one round trip)."""

    count = 0


class _CountingMixin:
    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        RoundTrips.count += 1
        super().send_packed_command(command, check_health)  # type: ignore[misc]


class CountingConnection(_CountingMixin, redis.Connection):
    pass


class CountingUnixConnection(_CountingMixin, redis.UnixDomainSocketConnection):
    pass


class CountingSSLConnection(_CountingMixin, redis.SSLConnection):
    pass


_COUNTING = {
    redis.Connection: CountingConnection,
    redis.UnixDomainSocketConnection: CountingUnixConnection,
    redis.SSLConnection: CountingSSLConnection,
}

_lock = threading.Lock()
_client: redis.Redis | None = None
_reader: redis.Redis | None = None
_last_restart = 0.0


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
    pool = redis.ConnectionPool.from_url(
        url,
        decode_responses=True,
        socket_timeout=COMMAND_TIMEOUT_S,
        socket_connect_timeout=COMMAND_TIMEOUT_S,
        max_connections=200,
    )
    pool.connection_class = _COUNTING.get(pool.connection_class, pool.connection_class)
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


def get_store() -> redis.Redis:
    """The process-wide client; the first call starts the embedded server and loads functions."""
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                try:
                    client = connect(store_url())
                    load_functions(client)
                except UNAVAILABLE as exc:
                    raise StoreUnavailable(str(exc)) from exc
                _client = client
    return _client


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


# --- Replies as text ------------------------------------------------------------------------
# redis-py types replies as `bytes | str` since a client may or may not decode them. Every client
# made here has decode_responses=True, so replies are text: these give them that type (a cast,
# no work at run time).


def text(reply: bytes | str) -> str:
    """A decoded string reply."""
    return cast(str, reply)


def text_or_none(reply: bytes | str | None) -> str | None:
    """A decoded string reply that may be nil."""
    return cast("str | None", reply)


def text_hash(reply: Mapping[bytes | str, bytes | str]) -> dict[str, str]:
    """A decoded HGETALL (or field/value map) reply."""
    return cast("dict[str, str]", reply)


def text_list(reply: Sequence[object]) -> list[str]:
    """A decoded list reply (LRANGE, SMEMBERS as a list, ZRANGE without scores)."""
    return cast("list[str]", reply)


def text_values(reply: Sequence[bytes | str | None]) -> list[str | None]:
    """A decoded HMGET/MGET reply (None for a missing field or key)."""
    return cast("list[str | None]", reply)


def text_scored(reply: object) -> list[tuple[str, float]]:
    """A decoded ZRANGE ... WITHSCORES reply: (member, score) pairs."""
    return cast("list[tuple[str, float]]", reply)


def text_stream(reply: object) -> list[tuple[str, dict[str, str]]]:
    """A decoded XRANGE/XREVRANGE reply: (entry id, fields) pairs, never nil entries."""
    return cast("list[tuple[str, dict[str, str]]]", reply)


# --- Server-side function libraries --------------------------------------------------------


def library_text(source: Path) -> str:
    """One function library's text: a `.lua` file as it is, or a folder of files joined in the
    order its `library.txt` lists them (one file per function family)."""
    if source.is_file():
        return source.read_text()
    names = [
        line.strip()
        for line in (source / "library.txt").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    return "\n".join((source / name).read_text() for name in names)


def function_sources() -> list[Path]:
    """Every function library of the installed apps, in app order: `<app>/lua/<name>.lua`, or a
    folder `<app>/lua/<name>/` whose `library.txt` lists its files."""
    sources: list[Path] = []
    for app in apps.get_app_configs():
        lua = Path(app.path) / "lua"
        sources.extend(sorted(lua.glob("*.lua")))
        sources.extend(sorted(path.parent for path in lua.glob("*/library.txt")))
    return sources


def load_functions(client: redis.Redis) -> None:
    """Load (or replace) every function library on every primary; proves the server runs Lua.

    On a cluster each primary needs its own copy (a replica has its primary's); a primary that
    is new or took over after a failover gets them again through `fcall`'s retry.
    """
    sources = [library_text(source) for source in function_sources()]
    for node in primaries(client):
        for source in sources:
            node.function_load(source, replace=True)


def function_missing(error: object) -> bool:
    """Whether an error says the server lacks a function (a new or restarted server, a new
    primary after a failover: the libraries are not there)."""
    return isinstance(error, redis.ResponseError) and "Function not found" in str(error)


def with_functions(client: redis.Redis, send: Callable[[], T]) -> T:
    """`send()` (whatever sends FCALLs), sent once more after loading the libraries when the
    server has lost them: the one home of "load the functions and retry"."""
    try:
        return send()
    except redis.ResponseError as exc:
        if not function_missing(exc):
            raise
    load_functions(client)
    return send()


def pipeline_functions(client: redis.Redis, fill: Callable[[Any], object]) -> list[Any]:
    """A pipeline that `fill` puts FCALLs (and reads) into, sent in one round trip; built and
    sent again whole if the server had lost the libraries (then no FCALL of it ran)."""

    def send() -> list[Any]:
        pipe = client.pipeline(transaction=False)
        fill(pipe)
        return cast(list[Any], pipe.execute())

    return with_functions(client, send)


def fcalls(
    client: redis.Redis, calls: Sequence[tuple[str, Sequence[str], Sequence[Any]]]
) -> list[Any]:
    """Several FCALLs (function, KEYS, ARGV) in one pipeline: one round trip."""

    def fill(pipe: Any) -> None:
        for function, keys, args in calls:
            pipe.fcall(function, len(keys), *keys, *args)

    return pipeline_functions(client, fill)


def fcall(
    client: redis.Redis,
    function: str,
    keys: Sequence[str],
    args: Sequence[Any],
    *,
    read_only: bool = False,
) -> Any:
    """FCALL `function` (FCALL_RO when `read_only`: the function is flagged no-writes),
    loading the libraries once if the server has lost them."""
    call = client.fcall_ro if read_only else client.fcall
    return with_functions(client, lambda: call(function, len(keys), *keys, *args))


_WAITAOF_ATTRIBUTE = "_strongroom_waitaof"


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


def durability(client: redis.Redis) -> str:
    """STRONGROOM_DURABILITY, or when unset: "aof+replica" on a cluster with replicas, else
    "aof"."""
    chosen: str = settings.STRONGROOM_DURABILITY
    if chosen:
        return chosen
    if is_cluster(client) and _cluster(client).get_replicas():
        return "aof+replica"
    return "aof"


class NotDurable(Exception):
    """The write happened but the server could not confirm it reached the disk (and, under
    aof+replica, a replica) in time."""


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
) -> Any:
    """FCALL then WAITAOF on the same connection, in one round trip.

    WAITAOF inside a script returns at once, so it follows the call in a pipeline (one
    connection, one round trip); on a cluster that connection is the one to the primary that
    owns the keys. Without WAITAOF the server must run `appendfsync always`.
    """
    return durable_calls(client, [Call(function, keys, args)], timeout_ms=timeout_ms)[0]


def durable_calls(
    client: redis.Redis, calls: Sequence[Call | Write], *, timeout_ms: int = WAITAOF_TIMEOUT_MS
) -> list[Any]:
    """Several calls (or plain writes), each confirmed durable: one round trip per primary
    they reach, every primary written to with its own WAITAOF after its commands.

    Raises NotDurable when a primary could not confirm in time (its commands did run); the
    first error reply is raised as such. Commands are sent again after a redirection or a lost
    connection, so each must be idempotent (client-made ids).
    """
    wait = _wait_commands(client, timeout_ms)
    if not is_cluster(client):
        return _durable_batch(client, client, calls, wait)
    groups: dict[str, list[int]] = {}
    for index, call in enumerate(calls):
        node = _cluster(client).get_node_from_key(call.route)
        groups.setdefault(node.name, []).append(index)
    results: list[Any] = [None] * len(calls)
    for indexes in groups.values():
        batch = [calls[i] for i in indexes]
        for index, result in zip(indexes, _cluster_batch(client, batch, wait), strict=True):
            results[index] = result
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
    asking: bool = False,
) -> list[Any]:
    """The commands, then WAITAOF (unless `wait` is None), in one pipeline on `node` (the
    server, or one primary)."""

    def send() -> list[Any]:
        pipe = node.pipeline(transaction=False)
        for call in calls:
            if asking:
                pipe.execute_command("ASKING")
            pipe.execute_command(*call.command)
        for command in wait or ():
            pipe.execute_command(*command)
        replies = pipe.execute(raise_on_error=False)
        waited = [replies.pop() for _ in wait or ()]
        synced = waited[0] if waited else None  # the last command: WAITAOF
        # Under ASK every command follows its own ASKING (whose OK is skipped here).
        results = replies[1::2] if asking else replies
        error = next((r for r in results if isinstance(r, Exception)), None)
        if error is not None:
            raise error
        failed = next((w for w in waited if isinstance(w, Exception)), None)
        if failed is not None:
            raise failed
        if (
            wait is not None
            and synced is not None
            and (int(synced[0]) < 1 or int(synced[1]) < wait[-1][2])
        ):
            raise NotDurable(str(calls[0].command[:2]))
        return list(results)

    return with_functions(client, send)


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
                client, node.redis_connection, calls, wait, asking=ask_node is not None
            )
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


def _cluster_ok(node: redis.Redis) -> bool:
    info = node.execute_command("CLUSTER INFO")
    if isinstance(info, dict):  # redis-py parses the reply into a dict
        return info.get("cluster_state") == "ok"
    return "cluster_state:ok" in str(info)


def healthy(client: redis.Redis) -> bool:
    """One server: it answers PING. A cluster: every primary answers and reports
    `cluster_state:ok` (the topology is read again once when one does not)."""
    if not is_cluster(client):
        return bool(client.ping())
    for attempt in (1, 2):
        try:
            return all(_cluster_ok(node) for node in primaries(client))
        except UNAVAILABLE:
            if attempt == 2:
                raise
            topology_refresh(client)
    return False


def _cluster_size(client: redis.Redis) -> int:
    """How many primaries serve slots when `client`'s server is a cluster node (0 if not)."""
    if not int(client.info("cluster").get("cluster_enabled", 0)):
        return 0
    info = client.execute_command("CLUSTER INFO")
    if isinstance(info, dict):
        return int(info.get("cluster_size", 0))
    found = re.search(r"cluster_size:(\d+)", str(info))
    return int(found.group(1)) if found else 0


def check(client: redis.Redis) -> dict[str, str]:
    """Start-up check: the server answers and runs Lua. Returns server name and version."""
    if not healthy(client):
        raise StoreUnavailable("the cluster is not ok (cluster_state)")
    if not is_cluster(client) and _cluster_size(client) > 1:
        raise ImproperlyConfigured(
            "REDIS_URL points at one node of a cluster of several primaries: write it "
            "redis+cluster://host:port[,host:port...] (rediss+cluster:// for TLS)"
        )
    first = primaries(client)[0]
    if first.eval("return 1", 0) != 1:
        raise StoreUnavailable("the store does not run Lua scripts")
    load_functions(client)
    info = first.info("server")
    name = "valkey" if "valkey_version" in info else "redis"
    return {"server": name, "version": str(info.get(f"{name}_version", info["redis_version"]))}


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
