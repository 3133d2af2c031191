"""/staff/: the staff dashboard (every page staff only)."""

from __future__ import annotations

from django.urls import path

from dashboard import (
    views,
    views_acting,
    views_bookings,
    views_closures,
    views_desk,
    views_mail,
    views_people,
)

app_name = "dashboard"
urlpatterns = [
    path("", views.overview, name="overview"),
    path("occupancy/", views.occupancy, name="occupancy"),
    path("bookings/", views_bookings.bookings, name="bookings"),
    path("bookings/export.csv", views_bookings.bookings_csv, name="bookings_csv"),
    path("bookings/export.ics", views_bookings.bookings_ics, name="bookings_ics"),
    path("bookings/find/", views_bookings.booking_find, name="booking_find"),
    path("bookings/<str:booking_id>/", views_bookings.booking_detail, name="booking"),
    path(
        "bookings/<str:booking_id>/cancel/",
        views_bookings.booking_cancel_staff,
        name="booking_cancel",
    ),
    path("bookings/<str:booking_id>/move/", views_acting.booking_move_staff, name="booking_move"),
    path(
        "bookings/<str:booking_id>/receipt/",
        views_acting.booking_receipt_staff,
        name="booking_receipt",
    ),
    path("desk/", views_desk.desk, name="desk"),
    path("desk/handover/", views_desk.desk_handover, name="desk_handover"),
    path("people/", views_people.people, name="people"),
    path("people/<int:person_id>/", views_people.person_detail, name="person"),
    path("people/<int:person_id>/staff/", views_people.person_staff_set, name="person_staff"),
    path("people/<int:person_id>/delete/", views_people.person_delete_staff, name="person_delete"),
    path("people/<int:person_id>/book/", views_acting.person_book_staff, name="person_book"),
    path("catalog/", views.catalog, name="catalog"),
    path("closures/", views_closures.closures, name="closures"),
    path("closures/check/", views_closures.closure_check, name="closure_check"),
    path("closures/close/", views_closures.closure_confirm, name="closure_confirm"),
    path("closures/<str:closure_id>/reopen/", views_closures.closure_reopen, name="closure_reopen"),
    path("window/", views.sales_window, name="window"),
    path("window/set/", views.sales_window_set, name="window_set"),
    path("keyspace/", views.keyspace, name="keyspace"),
    path("keyspace/flush/", views.keyspace_flush, name="keyspace_flush"),
    path("audit/", views.audit, name="audit"),
    path("mail/", views_mail.mail_queue, name="mail"),
    path("mail/dead/", views_mail.mail_dead_letter, name="mail_dead"),
]
