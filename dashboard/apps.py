from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"

    def ready(self) -> None:
        from dashboard.services import AUDIT_KINDS
        from strongroom.audit import audit_kinds_register

        audit_kinds_register(kinds=AUDIT_KINDS)
