"""What other apps may change in booking (the staff dashboard): booking's writes behind one
name, as every app has (docs/architecture.md, "One app scheme"). The work is done by the engine's
modules, one per Redis Function family."""

from __future__ import annotations

from booking.engine.acting import booking_book_for
from booking.engine.cancel import CancelResult, booking_cancel
from booking.engine.desk import HandoverResult, booking_handover
from booking.engine.maintenance import FlushResult, inventory_flush
from booking.engine.moves import booking_move, move_request, receipt_resend
from booking.engine.results import MoveResult

__all__ = [
    "CancelResult", "FlushResult", "HandoverResult", "MoveResult", "booking_book_for",
    "booking_cancel", "booking_handover", "booking_move", "inventory_flush", "move_request",
    "receipt_resend",
]  # fmt: skip
