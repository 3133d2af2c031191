"""/catalog/: browse and book detail (anyone). The staff pages live under /staff/catalog/books/
(catalog/staff_urls.py); their old addresses under /catalog/staff/ redirect there for good."""

from __future__ import annotations

from collections.abc import Callable

from django.http.response import HttpResponseBase
from django.urls import path
from django.views.generic import RedirectView

from catalog import views

app_name = "catalog"


def _moved(name: str) -> Callable[..., HttpResponseBase]:
    """A permanent redirect to the staff page `name` (same arguments, same query)."""
    return RedirectView.as_view(
        pattern_name=f"catalog_staff:{name}", permanent=True, query_string=True
    )


urlpatterns = [
    path("", views.browse, name="browse"),
    path("book/<str:book_id>/", views.book_detail, name="book_detail"),
    path("staff/", _moved("books")),
    path("staff/add/", _moved("book_add")),
    path("staff/<str:book_id>/edit/", _moved("book_edit")),
    path("staff/<str:book_id>/delete/", _moved("book_delete")),
]
