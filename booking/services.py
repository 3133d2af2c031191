"""What other apps may change in booking (the staff dashboard): booking's writes behind one
name, as every app has (docs/architecture.md, "One app scheme"). The work is done by the engine's
modules, one per Redis Function family."""

from __future__ import annotations

from booking.engine.cancel import CancelResult, booking_cancel
from booking.engine.closures import (
    closure_add,
    closure_bookings_cancel,
    closure_new_id,
    closure_remove,
)
from booking.engine.maintenance import FlushResult, inventory_flush
from booking.engine.window import window_set

__all__ = [
    "CancelResult", "FlushResult", "booking_cancel", "closure_add", "closure_bookings_cancel",
    "closure_new_id", "closure_remove", "inventory_flush", "window_set",
]  # fmt: skip
