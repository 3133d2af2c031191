"""The real batching path of visit counts: a worker's thread writes them once an interval, and
a graceful exit writes the rest, so the counts are exact when nothing crashes."""

from __future__ import annotations

import datetime as dt
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from accounts.selectors import visits_by_day
from accounts.visits import VisitBatch
from strongroom.store import round_trips
from tests.conftest import CLUSTER_PRIMARIES, ON_CLUSTER, serve_site, site_env

DAY = dt.date(2026, 11, 20)


def _views_around_today(r: redis.Redis) -> tuple[int, int]:
    """Views and visitors of yesterday and today (a run may cross midnight)."""
    today = timezone.localdate()
    rows = visits_by_day(client=r, start=today - dt.timedelta(days=1), end=today)
    return sum(row.views for row in rows), sum(row.visitors for row in rows)


def _wait_for(condition, limit: float = 30.0) -> bool:
    """Poll until `condition()` holds (a liveness wait, not a timing assertion)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_the_flushing_thread_writes_every_view_of_many_threads_exactly(r: redis.Redis):
    batch = VisitBatch(interval_ms=lambda: 20)

    def browse(n: int) -> None:
        for i in range(250):
            batch.add(day=DAY, visitor=f"a:{n}-{i % 10}")

    workers = [threading.Thread(target=browse, args=(n,)) for n in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert _wait_for(lambda: batch.pending_views() == 0)
    rows = visits_by_day(client=r, start=DAY, end=DAY)
    assert (rows[0].views, rows[0].visitors) == (2000, 80)
    batch.close()


def test_a_flush_is_one_round_trip_whatever_it_carries(r: redis.Redis):
    batch = VisitBatch(interval_ms=lambda: 0)  # no thread: flushed here
    for n in range(500):
        batch.add(day=DAY + dt.timedelta(days=n % 3), visitor=f"s:{n}")
    with round_trips() as trips:
        assert batch.flush() == 500
    # One pipeline: one round trip on one server, at most one per primary on a cluster.
    assert trips.count <= CLUSTER_PRIMARIES if ON_CLUSTER else trips.count == 1
    rows = visits_by_day(client=r, start=DAY, end=DAY + dt.timedelta(days=2))
    assert sum(row.views for row in rows) == 500
    assert 490 <= sum(row.visitors for row in rows) <= 510  # HyperLogLog: within about 1 %


def _get(url: str, **headers: str) -> int:
    request = urllib.request.Request(url, headers={"User-Agent": "batch-test", **headers})
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()
        return int(answer.status)


def test_a_served_site_writes_its_views_within_a_second_and_the_rest_at_exit(
    one_server: redis.Redis, tmp_path: Path
):
    """gunicorn as production runs it (two workers, the once-a-second thread), on a store of its
    own: the session's served site may still write a view of an earlier test's into the shared
    one."""
    r = one_server
    process, base = serve_site(site_env(str(settings.REDIS_URL), tmp_path), workers=2)
    try:
        for _ in range(30):
            assert _get(base + "/") == 200
        assert _get(base + "/book/parts/calendar/?cls=A&room=7", **{"HX-Request": "true"}) == 200
        # Written by the workers' threads, without any request or exit to trigger it.
        assert _wait_for(lambda: _views_around_today(r)[0] >= 30)
        assert _views_around_today(r) == (30, 1)
        for _ in range(20):
            assert _get(base + "/catalog/") == 200
    finally:
        process.terminate()  # graceful: worker_exit writes what gathered since the last flush
        process.wait(timeout=30)
    assert _views_around_today(r) == (50, 1)  # exact; the htmx fragment is no page view


def test_views_being_taken_out_for_a_flush_still_count_as_pending(
    r: redis.Redis, monkeypatch: pytest.MonkeyPatch
):
    """Between taking the views out of the batch and marking them as being sent, a reader saw
    them nowhere: 0 pending before anything was written (a cluster run failed so, when one
    flush took all 2,000 views). A reader started in that very step sees them."""
    from accounts import visits

    release = threading.Event()
    seen: list[int] = []

    def slow_store() -> redis.Redis:
        release.wait(10)  # the write waits: what the reader sees is not yet written
        return r

    batch = VisitBatch(client=slow_store, interval_ms=lambda: 0)
    real_token = visits.secrets.token_hex
    readers: list[threading.Thread] = []

    def token_hex(n: int) -> str:  # called as the flush makes its unit: read from another thread
        reader = threading.Thread(target=lambda: seen.append(batch.pending_views()))
        reader.start()
        readers.append(reader)
        reader.join(0.2)
        return real_token(n)

    monkeypatch.setattr(visits.secrets, "token_hex", token_hex)
    for i in range(5):
        batch.add(day=DAY, visitor=f"a:{i}")
    flusher = threading.Thread(target=batch.flush)
    flusher.start()
    for _ in range(100):
        if readers:
            break
        threading.Event().wait(0.05)
    readers[0].join(10)
    release.set()
    flusher.join(10)
    assert seen == [5]


def test_views_a_flush_is_sending_still_count_as_pending(r: redis.Redis):
    """Not 0 while the write is on its way: a reader waiting for "all written" (a graceful
    exit, a test) read the counts before they were there (a flaky cluster run)."""
    sending, release = threading.Event(), threading.Event()

    def slow_store() -> redis.Redis:
        sending.set()
        release.wait(10)
        return r

    batch = VisitBatch(client=slow_store, interval_ms=lambda: 0)
    for i in range(5):
        batch.add(day=DAY, visitor=f"a:{i}")
    flusher = threading.Thread(target=batch.flush)
    flusher.start()
    assert sending.wait(10)
    assert batch.pending_views() == 5  # taken out of the batch, not written yet
    release.set()
    flusher.join(10)
    assert batch.pending_views() == 0
    rows = visits_by_day(client=r, start=DAY, end=DAY)
    assert (rows[0].views, rows[0].visitors) == (5, 5)
