"""The benchmark's URL conf: the site's own URLs plus /bench/ (the reference views). Used only
when STRONGROOM_BENCH_VIEWS=1 (strongroom/settings.py); the production URL conf never names
bench."""

from django.urls import include, path

from strongroom.urls import handler500
from strongroom.urls import urlpatterns as site_urlpatterns

urlpatterns = [*site_urlpatterns, path("bench/", include("bench.urls"))]

__all__ = ["handler500", "urlpatterns"]
