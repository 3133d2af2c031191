"""The keeper: a background thread in every web process that makes good what a crash or a
failover may have left undone, without an operator.

Each pass (every KEEPER_PERIOD_S; the repair one process at a time, under a lease):

1. On a cluster, it asks a node which primary serves each slot and compares that with the list
   last written to the store (keyspace family store-primaries). When a primary changed (a
   failover: a replica took over, perhaps without the primary's last writes), every repair
   plugged into `FAILOVER_REPAIRS` runs for the changed slots, the staff audit gets one
   `failover_repair` entry saying what was repaired, and the new list is written, durably.
   A repair that fails (the new primary cannot confirm yet) leaves the old list, so the next
   pass repairs again.
2. Every task plugged into `KEEPER_TASKS` runs (booking drains what claims could not index).

Apps plug their parts in from their AppConfig.ready (booking: booking/apps.py); strongroom/wsgi.py
starts the thread in every web process, as it starts the mail sender.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from strongroom import keyspace as ks
from strongroom.audit import staff_audit_record
from strongroom.plugins import Point
from strongroom.store import (
    UNAVAILABLE,
    NotDurable,
    StoreUnavailable,
    Write,
    durable_calls,
    is_cluster,
    primaries_by_slot,
    text_or_none,
)

logger = logging.getLogger(__name__)

KEEPER_PERIOD_S = 3.0
LEASE_MS = 60_000
SLOTS = 16384
AUDIT_KIND = "failover_repair"
AUDIT_ACTOR = "site"

Task = Callable[[redis.Redis], object]
Repair = Callable[[redis.Redis, frozenset[int]], str]
# Plugged by the apps in their AppConfig.ready (strongroom/plugins.py): `task(client)` runs on
# every pass of the keeper; `repair(client, slots)` when the primaries of `slots` changed, and
# returns a short account of what it repaired (for the staff audit).
KEEPER_TASKS: Point[Task] = Point("keeper tasks")
FAILOVER_REPAIRS: Point[Repair] = Point("failover repairs")


@dataclass(frozen=True)
class KeeperReport:
    """One pass: the slots whose primary changed (and were repaired), the repairs' accounts."""

    slots_repaired: int = 0
    detail: str = ""


def slots_changed(before: str, after: str) -> frozenset[int]:
    """The slots whose primary differs between two lists written by `primaries_by_slot`."""
    old, new = _owners(before), _owners(after)
    return frozenset(slot for slot in range(SLOTS) if old[slot] != new[slot])


def _owners(listing: str) -> list[str]:
    owners = [""] * SLOTS
    for part in listing.split(","):
        span, _, owner = part.partition("=")
        first, _, last = span.partition("-")
        if first.isdigit() and last.isdigit():
            for slot in range(int(first), min(int(last), SLOTS - 1) + 1):
                owners[slot] = owner
    return owners


def topology_check(*, client: redis.Redis) -> KeeperReport:
    """Repair after a change of primaries (see the module's doc); nothing off a cluster, while
    some slot has no primary, when the primaries are those last written, or while another
    process holds the repair's lease."""
    if not is_cluster(client):
        return KeeperReport()
    current = primaries_by_slot(client)
    if current is None:
        return KeeperReport()
    key = ks.STORE_PRIMARIES.key()
    if text_or_none(client.get(key)) == current:
        return KeeperReport()
    lease = ks.STORE_REPAIR_LEASE.key()
    token = secrets.token_hex(8)
    if not client.set(lease, token, nx=True, px=LEASE_MS):
        return KeeperReport()
    try:
        return _repair(client, key, current)
    finally:
        if client.get(lease) == token:
            client.delete(lease)


def _repair(client: redis.Redis, key: str, current: str) -> KeeperReport:
    before = text_or_none(client.get(key))  # again, under the lease
    report = KeeperReport()
    changed = slots_changed(before, current) if before is not None else frozenset()
    if changed:
        accounts = (repair(client, changed) for repair in FAILOVER_REPAIRS)
        detail = "; ".join(sorted(filter(None, accounts)))
        staff_audit_record(
            client=client,
            kind=AUDIT_KIND,
            actor_id=AUDIT_ACTOR,
            subject=f"{len(changed)} slots",
            detail=detail,
        )
        report = KeeperReport(len(changed), detail)
    if before != current:
        durable_calls(client, [Write(key, ("SET", key, current))])
    return report


def keeper_pass(*, client: redis.Redis) -> KeeperReport:
    """One pass: the repair after a change of primaries (under a lease), then every task.
    Writes nothing when there is nothing to do."""
    report = topology_check(client=client)
    for task in KEEPER_TASKS:
        task(client)
    return report


def _keeper_loop() -> None:
    from strongroom.store import get_store

    while True:
        time.sleep(KEEPER_PERIOD_S)
        try:
            keeper_pass(client=get_store())
        except (*UNAVAILABLE, StoreUnavailable, NotDurable) as exc:
            # Away, or a new primary without a replica to confirm yet: the next pass repairs.
            logger.warning("the keeper's pass could not finish (%r); next in a few seconds", exc)
        except Exception:
            logger.warning("the keeper's pass failed; next in a few seconds", exc_info=True)


_thread: threading.Thread | None = None
_thread_lock = threading.Lock()


def keeper_start() -> None:
    """Start this process's keeper thread once."""
    global _thread
    with _thread_lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_keeper_loop, name="keeper", daemon=True)
            _thread.start()
