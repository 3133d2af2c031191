from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self) -> None:
        # Registers the account mail renderers with the outbox.
        from accounts import mail  # noqa: F401
