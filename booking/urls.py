"""Booking URLs (under /book/)."""

from django.urls import path

from booking import map_views, views, views_calendar, views_mine, views_pickup, views_waits

app_name = "booking"
urlpatterns = [
    path("", views.booking_pick, name="pick"),
    path("find/", map_views.building_map, name="find"),
    path("find/parts/results/", map_views.building_map_results, name="find_results"),
    path("parts/panel/", views.booking_panel, name="panel"),
    path("parts/calendar/", views.booking_calendar, name="calendar"),
    path("hold/", views.hold_place, name="hold"),
    path("hold/release/", views.hold_release, name="release"),
    path("confirm/<str:hold_id>/", views.hold_confirm, name="confirm"),
    path("claim/", views.booking_submit, name="claim"),
    path("done/<str:booking_id>/", views_mine.booking_done, name="done"),
    path("mine/", views_mine.bookings_mine, name="mine"),
    path("mine/<str:booking_id>/cancel/", views_mine.booking_cancel_page, name="cancel"),
    path("pickup/", views_pickup.pickup_kiosk, name="pickup"),
    path("mine/<str:booking_id>/calendar.ics", views_calendar.booking_ics, name="ics"),
    path("calendar/<str:token>.ics", views_calendar.calendar_subscription, name="subscription"),
    path("wait/", views_waits.wait_page, name="wait"),
    path("wait/leave/", views_waits.wait_leave_page, name="wait_leave"),
]
