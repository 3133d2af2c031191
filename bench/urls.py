"""/bench/: the benchmark's reference views and page twins (included only when
STRONGROOM_BENCH_VIEWS=1)."""

from __future__ import annotations

from django.urls import path

from bench import twin, views

app_name = "bench"
urlpatterns = [
    path("hello", views.hello, name="hello"),
    path("base", views.base_template, name="base"),
    path("twin/<path:page>", twin.twin, name="twin"),
]
