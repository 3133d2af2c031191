"""The sales window in the store: read it (each process keeps it a few seconds), and staff
change it (audited). The window itself and its bounds: booking.domain.window."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import redis
from django.conf import settings

from booking.domain.window import (
    SalesWindow,
    window_age,
    window_current,
    window_from_fields,
    window_from_settings,
    window_remember,
)
from strongroom import keyspace as ks
from strongroom.audit import DETAIL_LIMIT
from strongroom.calls import FunctionSpec
from strongroom.clock import to_ms
from strongroom.decoders import text_hash
from strongroom.libraries import fcall

WINDOW_AUDIT_KIND = "sales_window"  # a staff action (booking.apps registers it)
WINDOW_SET = FunctionSpec(
    "booking_window_set",
    "WINDOW_SET",
    ("window", "audit"),
    ("days", "first", "last", "unset", "after", "actor", "now_ms", "audit_maxlen", "request_id"),
    replies=("set before", "same before", "invalid what"),
)
_BEFORE_WORDS_MAX = len("fixed 2026-12-01..2026-12-31 -> ")


@dataclass(frozen=True)
class WindowSaved:
    """What a save found: the words of the window in force before it (`before`), and whether it
    changed the window (False: the window asked for was that one, and nothing was written)."""

    before: str
    changed: bool


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
    request_id: str = "",
    now: dt.datetime | None = None,
) -> WindowSaved:
    """Store a new window and its audit entry in one call (booking_window_set), the entry
    naming the window the store held until then (returned, in the audit's words); the same
    `request_id` (the form's) sent again writes nothing and returns the same answer. The window
    in force asked for again writes nothing, no audit entry either (`changed` False). This process
    uses the new one at once, the others within STRONGROOM_WINDOW_REFRESH_SECONDS. Nothing else
    changes: sold slots, holds and waits are addressed by calendar date."""
    after = window_describe(window)
    if reason:
        after += f": {reason}"
    fields = window.as_fields()
    call_keys, call_args = WINDOW_SET.call(
        keys={"window": ks.SALES_WINDOW.key(), "audit": ks.STAFF_AUDIT.key()},
        args={
            **fields,
            "unset": window_describe(window_from_settings()),
            # The words of the window replaced are at most 30 characters ("fixed A..B").
            "after": after[: DETAIL_LIMIT - _BEFORE_WORDS_MAX],
            "actor": actor_id,
            "now_ms": to_ms(now or dt.datetime.now(tz=dt.UTC)),
            "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
            "request_id": request_id,
        },
    )
    answer = WINDOW_SET.answer_of(fcall(client, WINDOW_SET.name, call_keys, call_args))
    if answer["status"] == "invalid":
        raise ValueError(f"booking_window_set refused the call: {answer['what']}")
    window_remember(window)
    return WindowSaved(before=str(answer["before"]), changed=answer["status"] == "set")
