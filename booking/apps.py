from django.apps import AppConfig


class BookingConfig(AppConfig):
    name = "booking"

    def ready(self) -> None:
        """What booking adds to the other apps (strongroom/plugins.py), all declared here."""
        from accounts import extensions
        from booking.domain.rules import AUDIT_KINDS
        from booking.engine import (
            indexes_repair,
            moves_rooms,
            owners,
            priority,
            reminders,
            waits_upkeep,
        )
        from booking.engine.closures import CLOSURE_AUDIT_KINDS
        from booking.engine.upgrade import layout_check_of
        from booking.engine.window import WINDOW_AUDIT_KIND
        from booking.web import mail
        from strongroom import audit, keeper, outbox, startup

        # Written by the booking Lua into each room's own stream, not the staff stream.
        audit.KINDS.plug(*audit.audit_kinds_of(AUDIT_KINDS, stream="booking"))
        # Staff actions of booking (the staff stream): the sales window, closures.
        audit.KINDS.plug(*audit.audit_kinds_of((WINDOW_AUDIT_KIND, *CLOSURE_AUDIT_KINDS)))
        outbox.RENDERERS.plug(*mail.MAIL_KINDS)
        outbox.SENDER_HOOKS.plug(
            waits_upkeep.sweep_with_the_mail, moves_rooms.moves_sweep, reminders.reminders_sweep
        )
        extensions.ACCOUNT_PARTS.plug(owners.ACCOUNT_PART)
        extensions.PERSON_FORGETTERS.plug(owners.forget_on_account_deletion)
        extensions.SIGNED_OUT.plug(_release_hold_at_sign_out)
        extensions.EMAIL_VERIFIED.plug(mail.receipts_owed_send)
        # The priority holds read with the identity: the banner on every page.
        extensions.IDENTITY_READS.plug(priority.PRIORITY_READ)
        # The keeper's sweep and failover repairs of the indexes and the waits.
        keeper.KEEPER_TASKS.plug(indexes_repair.indexes_sweep)
        keeper.FAILOVER_REPAIRS.plug(indexes_repair.indexes_repair, waits_upkeep.waits_repair)
        # A store still in the season layout is not served (booking.engine.upgrade).
        startup.STARTUP_CHECKS.plug(layout_check_of)


def _release_hold_at_sign_out(*, person_id: str) -> None:
    """Logout gives the buyer's hold back at once (it would otherwise keep its slots until it
    expires)."""
    from booking.engine.holds import holds_release_of
    from strongroom.store import get_store

    holds_release_of(client=get_store(), owner_id=person_id)
