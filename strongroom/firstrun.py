"""Demo data only where asked: `serve` loads it on a new embedded store's first run, once."""

from __future__ import annotations

from collections.abc import Callable

import redis

from strongroom.clock import now_ms
from strongroom.keyspace import DEMO_LOADED, prefix_pattern


def store_has_data(*, client: redis.Redis) -> bool:
    """True when any key of this site exists (SCAN, stopping at the first one found)."""
    for _key in client.scan_iter(match=prefix_pattern(), count=1000):
        return True
    return False


def first_run_demo(
    *, client: redis.Redis, embedded: bool, setting: str, load: Callable[[], object]
) -> str:
    """Call `load` when the demo is wanted (STRONGROOM_DEMO, see README) and this store has
    never held anything; return one line saying what was done and why.

    A later run finds the marker (or other data) and loads nothing: demo bookings are not
    added again and a revoked demo staff member stays revoked.
    """
    if setting == "0":
        return "demo data: not loaded (STRONGROOM_DEMO=0)"
    if setting == "auto" and not embedded:
        return "demo data: not loaded (REDIS_URL is set; STRONGROOM_DEMO=1 would load it)"
    loaded_at = client.get(DEMO_LOADED.key())
    if loaded_at is not None:
        return "demo data: loaded on this store's first run; not loaded again"
    if store_has_data(client=client):
        return "demo data: not loaded (the store already holds data; `manage.py loaddemo` adds it)"
    load()
    client.set(DEMO_LOADED.key(), now_ms())
    return "demo data: loaded (first run of this store)"
