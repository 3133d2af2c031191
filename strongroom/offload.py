"""Work that holds a core for a long time (a password's hash: Django's PBKDF2, about 0.4 s) done
off a gevent worker's event loop, so that it does not stop every other request of the worker.

A gevent worker serves all its requests on one thread: a password hashed there holds them all
for as long as it runs, and twenty logins or sign-ups at once (strangers' wrong passwords
included) held a worker's bookings for seconds. Here the hash runs on one thread of the worker's
own (`OFFLOAD_THREADS`; hashlib lets go of the interpreter lock while it hashes), whose
scheduling priority is lowered (`OFFLOAD_NICENESS`): on a busy machine the requests go first, the
hashes take what is left, and on an idle one they run at full speed. A flood of password checks
then slows the password checks, not the site. Outside a gevent worker (tests, commands,
`runserver`) the work runs where it is called.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

_Result = TypeVar("_Result")

OFFLOAD_THREADS = 1  # per worker process: at most this many hashes of the worker run at once
OFFLOAD_NICENESS = 10  # of the offload threads (Linux: a thread's own niceness)

_pool: Any = None  # the worker's gevent thread pool, made at its first use (after the fork)


def _patched() -> bool:
    """Whether this process is a gevent worker (the standard library patched)."""
    try:
        from gevent import monkey  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - gevent is a dependency of the site
        return False
    return bool(monkey.is_module_patched("threading"))


def _lowered(work: Callable[..., _Result], args: tuple[Any, ...]) -> _Result:
    """`work(*args)` on an offload thread, the thread's priority lowered first (a thread of the
    pool is only ever lowered: setting the same niceness again is allowed to anyone)."""
    try:
        from gevent import monkey

        native_id = monkey.get_original("threading", "get_native_id")
        os.setpriority(os.PRIO_PROCESS, native_id(), OFFLOAD_NICENESS)
    except (OSError, AttributeError):  # pragma: no cover - not Linux, or not allowed
        pass
    return work(*args)


def off_loop(work: Callable[..., _Result], *args: Any) -> _Result:
    """`work(*args)`, run off the event loop in a gevent worker (the calling request waits, the
    worker's other requests do not), or right here elsewhere. Exceptions reach the caller."""
    global _pool
    if not _patched():
        return work(*args)
    if _pool is None:
        from gevent.threadpool import ThreadPool  # type: ignore[import-untyped]

        _pool = ThreadPool(OFFLOAD_THREADS)
    result: _Result = _pool.apply(_lowered, (work, args))
    return result
