"""The site's URLs: one prefix per app (the benchmark adds its own in bench/root_urls.py)."""

from django.urls import include, path

from strongroom import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("accounts/", include("accounts.urls")),
    path("book/", include("booking.urls")),
    path("catalog/", include("catalog.urls")),
    path("staff/catalog/books/", include("catalog.staff_urls")),
    path("staff/", include("dashboard.urls")),
]

handler400 = "strongroom.views.bad_request"
handler500 = "strongroom.views.server_error"
