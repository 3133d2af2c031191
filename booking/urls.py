"""Booking URLs (under /book/)."""

from django.urls import path

from booking import views, views_calendar, views_waits

app_name = "booking"
urlpatterns = [
    path("", views.book, name="book"),
    path("parts/panel/", views.panel, name="panel"),
    path("parts/calendar/", views.calendar, name="calendar"),
    path("hold/", views.hold, name="hold"),
    path("hold/release/", views.release, name="release"),
    path("confirm/<str:hold_id>/", views.confirm, name="confirm"),
    path("claim/", views.claim, name="claim"),
    path("done/<str:booking_id>/", views.done, name="done"),
    path("mine/", views.mine, name="mine"),
    path("mine/<str:booking_id>/cancel/", views.cancel, name="cancel"),
    path("pickup/", views.pickup, name="pickup"),
    path("mine/<str:booking_id>/calendar.ics", views_calendar.booking_calendar, name="ics"),
    path("calendar/<str:token>.ics", views_calendar.subscription, name="subscription"),
    path("wait/", views_waits.wait, name="wait"),
    path("wait/leave/", views_waits.wait_leave_view, name="wait_leave"),
]
