from django.apps import AppConfig


class StrongroomConfig(AppConfig):
    name = "strongroom"
    verbose_name = "Strongroom"
