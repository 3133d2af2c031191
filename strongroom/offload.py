"""Work that holds a core for a long time (a password's hash: Django's PBKDF2, about 0.4 s) done
off a gevent worker's event loop, so that it does not stop every other request of the worker.

A gevent worker serves all its requests on one thread: a password hashed there holds them all
for as long as it runs, and twenty logins or sign-ups at once (strangers' wrong passwords
included) held a worker's bookings for seconds. Here the hash runs on a thread of the worker's
own (`OFFLOAD_THREADS`), and hashlib lets go of the interpreter lock while it hashes: the event
loop goes on serving meanwhile, the operating system sharing the cores between the two. A flood
of password checks then queues for that thread and slows the password checks, not the site.
(The thread's priority is left as it is: lowered, it starved sign-ups and logins whenever
anything else kept the cores busy.) Outside a gevent worker (tests, commands, `runserver`) the
work runs where it is called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

_Result = TypeVar("_Result")

OFFLOAD_THREADS = 1  # per worker process: at most this many hashes of the worker run at once

_pool: Any = None  # the worker's gevent thread pool, made at its first use (after the fork)


def _patched() -> bool:
    """Whether this process is a gevent worker (the standard library patched)."""
    try:
        from gevent import monkey  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - gevent is a dependency of the site
        return False
    return bool(monkey.is_module_patched("threading"))


def off_loop(work: Callable[..., _Result], *args: Any) -> _Result:
    """`work(*args)`, run off the event loop in a gevent worker (the calling request waits, the
    worker's other requests do not), or right here elsewhere. Exceptions reach the caller."""
    global _pool
    if not _patched():
        return work(*args)
    if _pool is None:
        from gevent.threadpool import ThreadPool  # type: ignore[import-untyped]

        _pool = ThreadPool(OFFLOAD_THREADS)
    result: _Result = _pool.apply(work, args)
    return result
