from django.apps import AppConfig


class StrongroomConfig(AppConfig):
    name = "strongroom"
    verbose_name = "Strongroom"

    def ready(self) -> None:
        from strongroom import audit
        from strongroom.keeper import AUDIT_KIND

        audit.KINDS.plug(*audit.audit_kinds_of((AUDIT_KIND,)))
