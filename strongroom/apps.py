from django.apps import AppConfig


class StrongroomConfig(AppConfig):
    name = "strongroom"
    verbose_name = "Strongroom"

    def ready(self) -> None:
        from strongroom.audit import audit_kinds_register
        from strongroom.keeper import AUDIT_KIND

        audit_kinds_register(kinds=(AUDIT_KIND,))
