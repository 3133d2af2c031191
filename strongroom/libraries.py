"""Calls of the server-side function libraries (FCALL, FCALL_RO, several in one pipeline): the
libraries loaded again (`strongroom.store.load_functions`) and the call retried once when the
server has lost them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import redis

from strongroom.store import load_functions

T = TypeVar("T")


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
