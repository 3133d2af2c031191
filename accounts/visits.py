"""Visit records: page views and unique visitors per day, counted off the request path.

A page view is counted in the worker's memory (`visit_count`: no store round trip, so a page
never waits for the store's fsync on its account). A thread of the worker writes what gathered
at most once every `STRONGROOM_VISITS_FLUSH_MS` (1 s), in one pipeline: the views under an id
that makes them count once (`accounts_visits_add`) and PFADD + EXPIRE of the visitors, per day
and shard. A graceful exit (gunicorn's
`worker_exit`, `atexit`) writes the rest, so counts are exact when nothing crashes; a worker
killed hard, or a machine that loses power, loses at most the counts of its last interval.
"""

from __future__ import annotations

import atexit
import datetime as dt
import logging
import os
import secrets
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.utils.crypto import salted_hmac

from accounts.calls import VISITS_ADD
from strongroom.keyspace import VISITS_APPLIED, VISITS_SHARDS, VISITS_VIEWS, VISITS_VISITORS
from strongroom.libraries import function_missing, with_functions
from strongroom.store import UNAVAILABLE, StoreUnavailable, get_store

logger = logging.getLogger(__name__)

# Visitor ids kept in memory while the store does not answer; beyond this, views are still
# counted but new visitors are dropped (an outage must not grow a worker without bound).
MAX_PENDING_VISITORS = 100_000
# PFADD arguments per command.
_PFADD_CHUNK = 1000
_STORE_ERRORS = (redis.RedisError, StoreUnavailable, OSError)


def visits_client() -> redis.Redis:
    """The client the visit writer uses (the site's store)."""
    return get_store()


def visitor_id(
    *, person_id: int | None, session_key: str | None, ip: str, user_agent: str, day: dt.date
) -> str:
    """Who counts as one visitor: a person by id, else the session, else a salted hash of
    IP + user agent that changes every day (the raw address is never stored)."""
    if person_id is not None:
        return f"p:{person_id}"
    if session_key:
        return "s:" + salted_hmac("strongroom.accounts.visit.session", session_key).hexdigest()[:24]
    raw = f"{day.isoformat()}\x00{ip}\x00{user_agent}"
    return "a:" + salted_hmac("strongroom.accounts.visit.address", raw).hexdigest()[:24]


def visitor_shard(visitor: str) -> int:
    """The one shard a visitor is counted in (stable across workers and restarts)."""
    return zlib.crc32(visitor.encode()) % VISITS_SHARDS


def _keep_seconds() -> int:
    return (settings.STRONGROOM_VISITS_KEEP_DAYS + 1) * 86400


def visits_write(
    *,
    client: redis.Redis,
    views: dict[str, int],
    visitors: dict[tuple[str, int], set[str]],
    views_shard: int,
    flush_id: str,
) -> bool:
    """Write gathered counts in one pipeline: `views` per ISO day go to `views_shard` once
    under `flush_id` (`accounts_visits_add`: sent again, it adds nothing), visitors per (day,
    shard). Returns whether the views are written (False: send them again, same id)."""
    keep = _keep_seconds()
    days = list(views)

    def send() -> list[Any]:
        pipe = client.pipeline(transaction=False)
        if days:
            keys, args = VISITS_ADD.call(
                keys={"applied": VISITS_APPLIED.key(shard=views_shard)},
                args={"flush_id": flush_id, "now_ms": int(time.time() * 1000), "keep_s": keep},
                more_keys=[VISITS_VIEWS.key(shard=views_shard, day=day) for day in days],
                more_args=[views[day] for day in days],
            )
            pipe.fcall(VISITS_ADD.name, len(keys), *keys, *args)
        for (day, shard), ids in visitors.items():
            key = VISITS_VISITORS.key(shard=shard, day=day)
            members = sorted(ids)
            for start in range(0, len(members), _PFADD_CHUNK):
                pipe.pfadd(key, *members[start : start + _PFADD_CHUNK])
            pipe.expire(key, keep)
        replies = pipe.execute(raise_on_error=False)
        if days and isinstance(replies[0], redis.ResponseError) and function_missing(replies[0]):
            raise replies[0]  # the libraries are loaded, and all of it sent again
        return list(replies)

    replies = with_functions(client, send)
    failed = [reply for reply in replies if isinstance(reply, Exception)]
    if failed:
        logger.warning("visit counts partly not written: %s", failed[0])
    # A PFADD that failed loses nothing by being sent again; the views carry their id.
    return not days or not isinstance(replies[0], Exception)


@dataclass(frozen=True)
class _Flush:
    """Views a flush sent whose answer did not come: sent again as they are, same id."""

    id: str
    shard: int
    views: dict[str, int]


class VisitBatch:
    """The page views and visitors a process gathered since its last flush."""

    def __init__(
        self,
        *,
        client: Callable[[], redis.Redis] | None = None,
        interval_ms: Callable[[], int] | None = None,
    ) -> None:
        # Looked up at each flush: settings and the store may change (tests, a restart).
        self._client = client or (lambda: visits_client())
        self._interval_ms = interval_ms or (lambda: settings.STRONGROOM_VISITS_FLUSH_MS)
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._views: Counter[str] = Counter()
        self._visitors: dict[tuple[str, int], set[str]] = {}
        self._pending_visitors = 0
        self._doubt: _Flush | None = None
        self._writing: _Flush | None = None  # the views a flush is sending now
        self._flushes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, *, day: dt.date, visitor: str) -> None:
        """Count one page view of `visitor` on `day` (memory only)."""
        iso = day.isoformat()
        with self._lock:
            self._views[iso] += 1
            bucket = self._visitors.setdefault((iso, visitor_shard(visitor)), set())
            if visitor not in bucket and self._pending_visitors < MAX_PENDING_VISITORS:
                bucket.add(visitor)
                self._pending_visitors += 1
            if self._thread is None and self._interval_ms() > 0:
                self._start()

    def pending_views(self) -> int:
        """Views not known written: gathered, in doubt, or being sent by a flush now."""
        with self._lock:
            doubt = sum(self._doubt.views.values()) if self._doubt else 0
            writing = self._writing
            sending = sum(writing.views.values()) if writing and writing is not self._doubt else 0
            return sum(self._views.values()) + doubt + sending

    def flush(self) -> int:
        """Write everything gathered so far in one pipeline; returns the views written. On a
        store error the counts are kept for the next flush, and views that may have been
        written (sent, no answer) go again alone, under their id, before any newer ones."""
        with self._flush_lock:
            # Taken out and marked as being sent in one step: a reader of pending_views never
            # sees them in neither place (it read 0 there, before the write, when one flush
            # took every view).
            with self._lock:
                views, visitors = dict(self._views), self._visitors
                self._views, self._visitors, self._pending_visitors = Counter(), {}, 0
                unit = self._doubt
                if unit is None and views:
                    self._flushes += 1
                    shard = (os.getpid() + self._flushes) % VISITS_SHARDS
                    unit, views = _Flush(secrets.token_hex(8), shard, views), {}
                self._writing = unit
            if unit is None and not visitors:
                return 0
            written = False
            try:
                try:
                    written = visits_write(
                        client=self._client(),
                        views=unit.views if unit else {},
                        visitors=visitors,
                        views_shard=unit.shard if unit else 0,
                        flush_id=unit.id if unit else "",
                    )
                except _STORE_ERRORS as error:
                    if isinstance(error, (*UNAVAILABLE, StoreUnavailable, OSError)):
                        # Away or stalled, as in any outage: one line, not a trace per flush.
                        logger.warning(
                            "visit counts not written: the store did not answer (%r)", error
                        )
                    else:
                        logger.warning("visit counts not written", exc_info=True)
                    self._put_back({}, visitors)
                self._put_back(views, {})  # gathered behind views in doubt: they go next time
            finally:
                with self._lock:  # never none pending between the send and its outcome
                    self._doubt = None if written else unit
                    self._writing = None
            return sum(unit.views.values()) if unit and written else 0

    def _put_back(self, views: dict[str, int], visitors: dict[tuple[str, int], set[str]]) -> None:
        with self._lock:
            self._views.update(views)
            for bucket, ids in visitors.items():
                self._visitors.setdefault(bucket, set()).update(ids)
                self._pending_visitors += len(ids)

    def discard(self) -> None:
        """Forget what gathered (tests, between stores)."""
        with self._lock:
            self._views, self._visitors, self._pending_visitors = Counter(), {}, 0
            self._doubt = None

    def _start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="visit-flush", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(max(self._interval_ms(), 1) / 1000):
            try:
                self.flush()
            except Exception:  # the thread must outlive any one bad flush
                logger.exception("visit flush failed")

    def close(self) -> None:
        """Stop the flushing thread and write what is left (graceful exit)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        self._thread = None
        # Views in doubt go alone: then what gathered behind them (a second flush), unless the
        # store fails again.
        for _ in range(2):
            self.flush()
            if self._doubt is not None or not self.pending_views():
                break

    def after_fork(self) -> None:
        """A forked child starts empty, with its own locks and no thread."""
        self._reset()


_BATCH = VisitBatch()
os.register_at_fork(after_in_child=_BATCH.after_fork)


@atexit.register
def _flush_at_exit() -> None:
    # Only where a thread flushes (a served site); with flushing on demand (the in-process
    # tests) the store may already be gone at exit.
    if settings.STRONGROOM_VISITS_FLUSH_MS > 0:
        _BATCH.close()


def visit_count(*, day: dt.date, visitor: str) -> None:
    """Count one page view (and visitor) of `day`; written by the worker's next flush."""
    _BATCH.add(day=day, visitor=visitor)


def visits_flush() -> int:
    """Write the counts gathered in this process now (tests; normally the thread does it)."""
    return _BATCH.flush()


def visits_pending() -> int:
    """Page views counted in this process and not yet written."""
    return _BATCH.pending_views()


def visits_discard() -> None:
    """Forget the counts gathered in this process (tests: a flushed store starts from zero)."""
    _BATCH.discard()


def visits_close() -> None:
    """Write what is left and stop the thread (gunicorn's worker_exit)."""
    _BATCH.close()


def visit_record(*, client: redis.Redis, day: dt.date, visitor: str) -> None:
    """Count one page view at once, in one round trip (scripts and the Redis 7.0 test; pages
    use `visit_count`)."""
    visits_write(
        client=client,
        views={day.isoformat(): 1},
        visitors={(day.isoformat(), visitor_shard(visitor)): {visitor}},
        views_shard=visitor_shard(visitor),
        flush_id=secrets.token_hex(8),
    )
