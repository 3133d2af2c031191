from django.apps import AppConfig

from accounts.access import signed_out


class BookingConfig(AppConfig):
    name = "booking"

    def ready(self) -> None:
        from booking.domain.rules import AUDIT_KINDS
        from strongroom.audit import audit_kinds_register

        # Written by the booking Lua into each room's own stream, not the staff stream.
        audit_kinds_register(kinds=AUDIT_KINDS, stream="booking")
        from booking.engine.window import WINDOW_AUDIT_KIND

        # A change of the sales window is a staff action (the staff stream).
        audit_kinds_register(kinds=(WINDOW_AUDIT_KIND,))
        from booking.engine.closures import CLOSURE_AUDIT_KINDS

        audit_kinds_register(kinds=CLOSURE_AUDIT_KINDS)
        # The booking mail renderers and the waiting-list sweep (the outbox), the account
        # page's upcoming bookings and account deletion (accounts.extensions).
        # The keeper's sweep and failover repair of the indexes (strongroom/keeper.py).
        from booking.engine import indexes_repair, owners, waits  # noqa: F401

        # A store still in the season layout is not served (booking.engine.upgrade).
        from booking.engine.upgrade import layout_check_of
        from booking.web import mail  # noqa: F401
        from strongroom.startup import startup_check_register

        startup_check_register(layout_check_of)

        signed_out.connect(_release_hold_at_sign_out, dispatch_uid="booking-release-hold")


def _release_hold_at_sign_out(sender: object, *, person_id: str, **kwargs: object) -> None:
    """Logout gives the buyer's hold back at once (it would otherwise keep its slots until it
    expires)."""
    from booking.engine.holds import holds_release_of
    from strongroom.store import get_store

    holds_release_of(client=get_store(), owner_id=person_id)
