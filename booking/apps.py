from django.apps import AppConfig


class BookingConfig(AppConfig):
    name = "booking"

    def ready(self) -> None:
        from booking.rules import AUDIT_KINDS
        from strongroom.audit import audit_kinds_register

        # Written by booking.lua into each room's own stream, not the staff stream.
        audit_kinds_register(kinds=AUDIT_KINDS, stream="booking")
