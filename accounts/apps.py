from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self) -> None:
        """What accounts adds to the core (strongroom/plugins.py): its mail kinds."""
        from accounts.mail import MAIL_KINDS
        from strongroom import outbox

        outbox.RENDERERS.plug(*MAIL_KINDS)
