"""Booking URLs (under /book/)."""

from django.urls import path

from booking import map_views, views

app_name = "booking"
urlpatterns = [
    path("", views.book, name="book"),
    path("find/", map_views.building_map, name="find"),
    path("find/parts/results/", map_views.building_map_results, name="find_results"),
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
]
