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

Work that anyone can ask for (a stranger's password to check, a sign-up's to hash) goes to the
open lane: a thread of its own, with at most `OPEN_LANE_LIMIT` pieces of work waiting or running
in the worker, and at most `OPEN_LANE_SHARE` of one share (a login's name). More is refused at
once (`Busy`: the caller says "try again in a few seconds") rather than queued: with one queue,
160 connections sending wrong passwords kept a buyer's right one waiting 142 s. Work for
someone the site knows (a login from a connection or browser where the name's person logged in
before, a new password of a signed-in person) has the other thread, and never waits behind the
open lane's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

_Result = TypeVar("_Result")

OFFLOAD_THREADS = 1  # per worker process and lane: at most this many hashes of a lane at once
# The open lane's work waiting or running at once, per worker: at 0.36 s a hash, the last
# one admitted waits about 2 s.
OPEN_LANE_LIMIT = 6
# Of those, at most this many for one `share` (a login's name): guesses at a few names fill
# only their own part of the lane, and everyone else's passwords are still checked.
OPEN_LANE_SHARE = 1

_pools: dict[bool, Any] = {}  # the worker's gevent thread pools by lane, made at first use
_open_in_use = 0  # the open lane's work admitted and not finished, in this process
_shares: dict[str, int] = {}  # of that work, how much is each share's


class Busy(Exception):
    """The open lane is full: the work was not run (nothing was done)."""


def _patched() -> bool:
    """Whether this process is a gevent worker (the standard library patched)."""
    try:
        from gevent import monkey  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - gevent is a dependency of the site
        return False
    return bool(monkey.is_module_patched("threading"))


def off_loop(
    work: Callable[..., _Result], *args: Any, open_lane: bool = False, share: str = ""
) -> _Result:
    """`work(*args)`, run off the event loop in a gevent worker (the calling request waits, the
    worker's other requests do not), or right here elsewhere. Exceptions reach the caller.
    `open_lane`: work anyone can ask for, refused with `Busy` when the lane is full, or when
    `share` (if given) has its part of it already."""
    global _open_in_use
    if open_lane:
        if _open_in_use >= OPEN_LANE_LIMIT or _shares.get(share, 0) >= OPEN_LANE_SHARE:
            raise Busy
        _open_in_use += 1
        if share:
            _shares[share] = _shares.get(share, 0) + 1
    try:
        if not _patched():
            return work(*args)
        pool = _pools.get(open_lane)
        if pool is None:
            from gevent.threadpool import ThreadPool  # type: ignore[import-untyped]

            pool = _pools[open_lane] = ThreadPool(OFFLOAD_THREADS)
        result: _Result = pool.apply(work, args)
        return result
    finally:
        if open_lane:
            _open_in_use -= 1
            if share:
                _shares[share] -= 1
                if not _shares[share]:
                    del _shares[share]
