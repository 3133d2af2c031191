from django.apps import AppConfig


class BookingConfig(AppConfig):
    name = "booking"

    def ready(self) -> None:
        # Registers the booking mail renderers and the waiting-list sweep with the outbox.
        from booking import mail, waits  # noqa: F401
