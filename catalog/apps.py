from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"

    def ready(self) -> None:
        from catalog.services import AUDIT_KINDS
        from strongroom.audit import audit_kinds_register

        audit_kinds_register(kinds=AUDIT_KINDS)
