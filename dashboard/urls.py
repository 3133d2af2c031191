"""/staff/: the staff dashboard (every page staff only)."""

from __future__ import annotations

from django.urls import path

from dashboard import views, views_mail

app_name = "dashboard"
urlpatterns = [
    path("", views.overview, name="overview"),
    path("occupancy/", views.occupancy, name="occupancy"),
    path("bookings/", views.bookings, name="bookings"),
    path("bookings/export.csv", views.bookings_csv, name="bookings_csv"),
    path("bookings/export.ics", views.bookings_ics, name="bookings_ics"),
    path("bookings/<str:booking_id>/", views.booking_detail, name="booking"),
    path("bookings/<str:booking_id>/cancel/", views.booking_cancel_view, name="booking_cancel"),
    path("people/", views.people, name="people"),
    path("people/<int:person_id>/", views.person_detail, name="person"),
    path("people/<int:person_id>/staff/", views.person_staff, name="person_staff"),
    path("catalog/", views.catalog, name="catalog"),
    path("keyspace/", views.keyspace, name="keyspace"),
    path("keyspace/flush/", views.keyspace_flush, name="keyspace_flush"),
    path("audit/", views.audit, name="audit"),
    path("mail/", views_mail.mail_queue, name="mail"),
]
