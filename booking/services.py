"""What other apps may change in booking (the staff dashboard): booking's writes behind one
name, as every app has (docs/architecture.md, "One app scheme"). The work is done by the engine's
modules, one per Redis Function family."""

from __future__ import annotations

from booking.engine.acting import booking_book_for
from booking.engine.cancel import CancelResult, booking_cancel
from booking.engine.closures import (
    closure_add,
    closure_bookings_cancel,
    closure_new_id,
    closure_remove,
)
from booking.engine.desk import HandoverResult, booking_handover
from booking.engine.maintenance import FlushResult, inventory_flush
from booking.engine.moves import booking_move, move_request, move_request_posted, receipt_resend
from booking.engine.results import MoveResult
from booking.engine.window import window_set

__all__ = [
    "CancelResult", "FlushResult", "HandoverResult", "MoveResult", "booking_book_for",
    "booking_cancel", "booking_handover", "booking_move", "closure_add", "closure_bookings_cancel",
    "closure_new_id", "closure_remove", "inventory_flush", "move_request", "move_request_posted",
    "receipt_resend",
    "window_set",
]  # fmt: skip
