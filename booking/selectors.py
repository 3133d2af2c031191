"""What other apps may read of booking (the staff dashboard): booking's reads behind one name,
as every app has (docs/architecture.md, "One app scheme"). The reads are the engine's (records,
counters, audit) and the read model's (booking/slots/)."""

from __future__ import annotations

from booking.domain.closures import Closure, rooms_parse
from booking.domain.formats import OutboxSubject, outbox_subject
from booking.engine.audit import (
    AuditEntry,
    audit_entries,
    booking_audit,
    booking_history,
    references_of,
)
from booking.engine.bookings import (
    booking_get,
    bookings_between,
    bookings_of,
    bookings_of_read,
    hold_current,
    hold_current_read,
)
from booking.engine.closures import MAX_CLOSURE_DAYS, closure_bookings, closures_list
from booking.engine.desk import Desk, DeskRow, desk_read
from booking.engine.moves import move_form_values
from booking.engine.stats import Occupancy, season_stats
from booking.engine.waits import waits_of, waits_of_read
from booking.engine.window import window_read, window_refresh
from booking.slots.bitmap import DayInventory, day_inventory, inventory_keys

__all__ = [
    "MAX_CLOSURE_DAYS", "AuditEntry", "Closure", "DayInventory", "Desk", "DeskRow", "Occupancy",
    "OutboxSubject", "audit_entries", "booking_audit", "booking_get", "booking_history",
    "bookings_between", "bookings_of", "bookings_of_read", "closure_bookings", "closures_list",
    "day_inventory", "desk_read", "hold_current", "hold_current_read", "inventory_keys",
    "move_form_values", "outbox_subject", "references_of", "rooms_parse", "season_stats",
    "waits_of", "waits_of_read", "window_read", "window_refresh",
]  # fmt: skip
