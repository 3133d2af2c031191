"""The site's URLs: one prefix per app."""

from django.conf import settings
from django.urls import include, path

from strongroom import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("accounts/", include("accounts.urls")),
    path("book/", include("booking.urls")),
    path("catalog/", include("catalog.urls")),
    path("staff/", include("dashboard.urls")),
]

# --- bench --- The benchmark's reference views exist only when STRONGROOM_BENCH_VIEWS=1.
if settings.STRONGROOM_BENCH_VIEWS:
    urlpatterns.append(path("bench/", include("bench.urls")))

handler500 = "strongroom.views.server_error"
