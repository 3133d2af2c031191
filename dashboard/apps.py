from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"

    def ready(self) -> None:
        from dashboard.services import AUDIT_KINDS
        from strongroom import audit

        audit.KINDS.plug(*audit.audit_kinds_of(AUDIT_KINDS))
