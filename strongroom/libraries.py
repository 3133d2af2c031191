"""The server-side function libraries: found in the installed apps, loaded on every primary, and
called (FCALL, FCALL_RO, several in one pipeline), loaded again and the call retried once when
the server has lost them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import redis
from django.apps import apps

from strongroom.store import primaries

T = TypeVar("T")


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
