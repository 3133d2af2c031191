"""Booking URLs (under /book/)."""

from django.urls import path

from booking.web import find, ics, mine, move, pick, pickup, wait

app_name = "booking"
urlpatterns = [
    path("", pick.booking_pick, name="pick"),
    path("find/", find.building_map, name="find"),
    path("find/parts/results/", find.building_map_results, name="find_results"),
    path("parts/panel/", pick.booking_panel, name="panel"),
    path("parts/calendar/", pick.booking_calendar, name="calendar"),
    path("hold/", pick.hold_place, name="hold"),
    path("hold/release/", pick.hold_release, name="release"),
    path("confirm/<str:hold_id>/", pick.hold_confirm, name="confirm"),
    path("claim/", pick.booking_submit, name="claim"),
    path("done/<str:booking_id>/", mine.booking_done, name="done"),
    path("done/<str:booking_id>/confirm/", mine.booking_settle_page, name="settle"),
    path("mine/", mine.bookings_mine, name="mine"),
    path("mine/<str:booking_id>/cancel/", mine.booking_cancel_page, name="cancel"),
    path("mine/<str:booking_id>/move/", move.booking_move_page, name="move"),
    path("pickup/", pickup.pickup_kiosk, name="pickup"),
    path("mine/<str:booking_id>/calendar.ics", ics.booking_ics, name="ics"),
    path("calendar/<str:token>.ics", ics.calendar_subscription, name="subscription"),
    path("wait/", wait.wait_page, name="wait"),
    path("wait/leave/", wait.wait_leave_page, name="wait_leave"),
]
