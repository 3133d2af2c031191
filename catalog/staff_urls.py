"""/staff/catalog/books/: the catalog's staff pages (in the one staff area, beside the
dashboard's pages under /staff/)."""

from __future__ import annotations

from django.urls import path

from catalog import views

app_name = "catalog_staff"
urlpatterns = [
    path("", views.staff_list, name="books"),
    path("add/", views.book_add, name="book_add"),
    path("<str:book_id>/edit/", views.book_edit, name="book_edit"),
    path("<str:book_id>/delete/", views.book_delete, name="book_delete"),
]
