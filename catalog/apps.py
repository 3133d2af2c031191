from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"

    def ready(self) -> None:
        from catalog.services import AUDIT_KINDS
        from strongroom import audit

        audit.KINDS.plug(*audit.audit_kinds_of(AUDIT_KINDS))
