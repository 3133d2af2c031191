"""The sales window in the store: read it (each process keeps it a few seconds), and staff
change it (audited). The window itself and its bounds: booking.domain.window."""

from __future__ import annotations

import datetime as dt
from typing import cast

import redis
from django.conf import settings
from redis.typing import EncodableT, FieldT

from booking.domain.window import (
    SalesWindow,
    window_age,
    window_current,
    window_from_fields,
    window_remember,
)
from strongroom import keyspace as ks
from strongroom.audit import DETAIL_LIMIT
from strongroom.clock import to_ms
from strongroom.decoders import text_hash

WINDOW_AUDIT_KIND = "sales_window"  # a staff action (booking.apps registers it)


def window_read(*, client: redis.Redis) -> SalesWindow | None:
    """The stored window (None: none stored, the environment's first value applies); one HGETALL.
    The process keeps what it read (booking.domain.window.window_current)."""
    fields = text_hash(client.hgetall(ks.SALES_WINDOW.key()))
    window = window_from_fields(fields) if fields else None
    window_remember(window)
    return window


def window_refresh(*, client: redis.Redis) -> SalesWindow:
    """The window in force, read again from the store when this process's copy is older than
    STRONGROOM_WINDOW_REFRESH_SECONDS."""
    age = window_age()
    if age is None or age >= settings.STRONGROOM_WINDOW_REFRESH_SECONDS:
        window_read(client=client)
    return window_current()


def window_describe(window: SalesWindow) -> str:
    """The window in a few words for the audit: 'rolling 31 days' or 'fixed A..B'."""
    if window.first and window.last:
        return f"fixed {window.first.isoformat()}..{window.last.isoformat()}"
    return f"rolling {window.days} days"


def window_set(
    *,
    client: redis.Redis,
    actor_id: str,
    window: SalesWindow,
    reason: str = "",
    now: dt.datetime | None = None,
) -> SalesWindow:
    """Store a new window and its audit entry in one transaction (same slot); this process uses
    it at once, the others within STRONGROOM_WINDOW_REFRESH_SECONDS. Nothing else changes: sold
    slots, holds and waits are addressed by calendar date."""
    before = window_current()
    detail = f"{window_describe(before)} -> {window_describe(window)}"
    if reason:
        detail += f": {reason}"
    at = to_ms(now or dt.datetime.now(tz=dt.UTC))
    pipe = client.pipeline(transaction=True)
    pipe.delete(ks.SALES_WINDOW.key())
    fields = cast("dict[FieldT, EncodableT]", window.as_fields())
    pipe.hset(ks.SALES_WINDOW.key(), mapping=fields)
    pipe.xadd(
        ks.STAFF_AUDIT.key(),
        {
            "kind": WINDOW_AUDIT_KIND,
            "actor": actor_id,
            "subject": "",
            "detail": detail[:DETAIL_LIMIT],
            "at": at,
        },
        maxlen=settings.STRONGROOM_AUDIT_MAXLEN,
        approximate=True,
    )
    pipe.execute()
    window_remember(window)
    return window
