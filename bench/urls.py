"""/bench/: the benchmark's reference views and render-only twins (included only when
STRONGROOM_BENCH_VIEWS=1)."""

from __future__ import annotations

from django.urls import path

from bench import render_twin, views

app_name = "bench"
urlpatterns = [
    path("hello", views.hello, name="hello"),
    path("base", views.base_template, name="base"),
    path("render/<path:page>", render_twin.render_twin, name="render_twin"),
]
