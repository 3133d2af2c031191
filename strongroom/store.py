"""The connection to the store, the server-side function libraries, and durable calls.

Every module takes the client as a parameter; `get_store()` is where views get it from.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import redis
from django.apps import apps
from django.conf import settings

from strongroom import embedded

# How long a command may wait for an answer: a stalled store (SIGSTOP, a stuck disk) gets the
# 503 page within about this long instead of holding the worker. WAITAOF's own timeout stays
# below it, so a slow fsync is reported as "not confirmed" rather than as an outage.
COMMAND_TIMEOUT_S = 1.5
WAITAOF_TIMEOUT_MS = 1000

# Errors that mean "the store is not there right now", as opposed to a bug.
UNAVAILABLE = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)


class StoreUnavailable(Exception):
    """The store did not answer; pages show the 503 page."""


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
    """A client for `url` whose connections count round trips."""
    pool = redis.ConnectionPool.from_url(
        url,
        decode_responses=True,
        socket_timeout=COMMAND_TIMEOUT_S,
        socket_connect_timeout=COMMAND_TIMEOUT_S,
        max_connections=200,
    )
    pool.connection_class = _COUNTING.get(pool.connection_class, pool.connection_class)
    return redis.Redis(connection_pool=pool)


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


def reset_store() -> None:
    """Forget the process-wide client (tests, and after a fork)."""
    global _client
    with _lock:
        if _client is not None:
            _client.close()
        _client = None


def recover() -> None:
    """After a store error: restart the embedded server if its process is gone (at most once a
    second). A server whose process exists is only slow or stopped: it is waited for, never
    replaced."""
    global _last_restart
    if not is_embedded() or time.monotonic() - _last_restart < 1.0:
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


def function_sources() -> list[Path]:
    """Every `<app>/lua/*.lua` library of the installed apps, in app order."""
    sources: list[Path] = []
    for app in apps.get_app_configs():
        sources.extend(sorted(Path(app.path).glob("lua/*.lua")))
    return sources


def load_functions(client: redis.Redis) -> None:
    """Load (or replace) every function library; also proves the server runs Lua."""
    for source in function_sources():
        client.function_load(source.read_text(), replace=True)


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
    try:
        return call(function, len(keys), *keys, *args)
    except redis.ResponseError as exc:
        if "Function not found" not in str(exc):
            raise
        load_functions(client)
        return call(function, len(keys), *keys, *args)


def execute_functions(client: redis.Redis, pipe: Any) -> list[Any] | None:
    """Run a pipeline of FCALLs; when the server has lost the libraries (a new or restarted
    server), load them and return None so the caller builds the pipeline again."""
    try:
        return cast(list[Any], pipe.execute())
    except redis.ResponseError as exc:
        if "Function not found" not in str(exc):
            raise
        load_functions(client)
        return None


_WAITAOF_ATTRIBUTE = "_strongroom_waitaof"


def waitaof_supported(client: redis.Redis) -> bool:
    """Whether the server has WAITAOF (Redis 7.2+, Valkey 8+); asked once per connection pool.

    The answer is kept on the client's pool, so one process talking to two servers (say
    Valkey 8 and Redis 7.0) gets each server's own answer.
    """
    pool = client.connection_pool
    known: bool | None = getattr(pool, _WAITAOF_ATTRIBUTE, None)
    if known is None:
        try:
            client.execute_command("WAITAOF", 0, 0, 1)
            known = True
        except redis.ResponseError:
            known = False
        setattr(pool, _WAITAOF_ATTRIBUTE, known)
    return known


class NotDurable(Exception):
    """The write happened but the server could not confirm it reached the disk in time."""


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
    connection, one round trip). Without WAITAOF the server must run `appendfsync always`.
    """
    if settings.STRONGROOM_DURABILITY == "none" or not waitaof_supported(client):
        return fcall(client, function, keys, args)
    for attempt in (1, 2):
        pipe = client.pipeline(transaction=False)
        pipe.fcall(function, len(keys), *keys, *args)
        pipe.execute_command("WAITAOF", 1, 0, timeout_ms)
        result, synced = pipe.execute(raise_on_error=False)
        if isinstance(result, redis.ResponseError):
            if "Function not found" in str(result) and attempt == 1:
                load_functions(client)
                continue
            raise result
        if isinstance(synced, Exception):
            raise synced
        if int(synced[0]) < 1:
            raise NotDurable(function)
        return result
    raise AssertionError("unreachable")


def check(client: redis.Redis) -> dict[str, str]:
    """Start-up check: the server answers and runs Lua. Returns server name and version."""
    client.ping()
    if client.eval("return 1", 0) != 1:
        raise StoreUnavailable("the store does not run Lua scripts")
    load_functions(client)
    info = client.info("server")
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
