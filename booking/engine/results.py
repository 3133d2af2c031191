"""What a move answers (booking.engine.moves and moves_rooms share it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext_lazy as _

from booking.domain.records import Booking, Slot


@dataclass(frozen=True)
class MoveResult:
    """ok: the booking now has the new slots (and a new code); otherwise it is as it was, and
    `taken` lists what is not free."""

    ok: bool
    outcome: str
    message: Any
    booking: Booking | None = None
    taken: tuple[Slot, ...] = ()


MOVE_MESSAGES = {
    "moved": _("The booking is moved. It has a new pickup code: the old one no longer opens."),
    # Shown under "Not moved: the booking is as it was.", which need not be said twice.
    "taken": _("Some of the new slots are not free."),
    "closed": _("Some of the new slots are closed."),
    "not_found": _("There is no such booking."),
    "forbidden": _("You can only move your own bookings."),
    "cancelled": _("This booking was cancelled and cannot be moved."),
    "collected": _("This booking has been collected and can no longer be moved."),
    "started": _("A booking can be moved only before its first day."),
    "unchanged": _("These are the booking's own slots already."),
    "other_class": _("A booking moves to slots of its own class, as many days as it has."),
    "aborted": _(
        "The move was stopped before it could finish (the new room was closed, or it "
        "took too long)."
    ),
    "stale": _("The booking changed while it was being moved: please try again."),
    "gone": _("This account is being deleted: nothing more is moved."),
    "moved_away": _(
        "This booking was moved meanwhile (from another tab, or by our staff): see where it "
        "is now before moving it again."
    ),
}
