from __future__ import annotations

from django.urls import path

from catalog import views

app_name = "catalog"
urlpatterns = [
    path("", views.browse, name="browse"),
    path("book/<str:book_id>/", views.book_detail, name="book"),
    path("staff/", views.staff_list, name="staff_list"),
    path("staff/add/", views.book_add, name="book_add"),
    path("staff/<str:book_id>/edit/", views.book_edit, name="book_edit"),
    path("staff/<str:book_id>/delete/", views.book_delete, name="book_delete"),
]
