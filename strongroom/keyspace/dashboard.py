"""The staff area's keys: the sales window and the staff audit stream."""

from __future__ import annotations

from django.utils.translation import gettext_noop as noop

from strongroom.keyspace.core import declare

SALES_WINDOW = declare(
    "sales-window",
    "{staff}:sales-window",
    type="hash",
    holds=noop(
        "the days on sale: days (a rolling window: tomorrow to that many days ahead), first and "
        "last (a fixed window; empty when rolling), and the request id and replaced window of "
        "the save that set it; absent: the environment's first value"
    ),
    app="booking",
    why=noop(
        "staff change it on the dashboard without a restart; in the staff audit's slot, so the "
        "change and its audit entry are written in one call (booking_window_set), which knows "
        "a save sent twice by its request id; no inventory key depends on it (they are named "
        "by calendar month)"
    ),
)

STAFF_AUDIT = declare(
    "staff-audit",
    "{staff}:audit",
    type="stream",
    holds=noop(
        "staff actions taken in the dashboard (grant or revoke staff, flush the season's "
        "inventory): kind, actor, subject, detail, at; capped with MAXLEN ~"
    ),
    app="dashboard",
    why=noop(
        "a stream is an append-only log read newest first with XREVRANGE; actions on rooms keep "
        "their own per-room booking-audit streams, the dashboard merges both"
    ),
)
