"""Reservation pages, the calendar feed and the reservations API; included under the fleet namespace."""

from django.urls import path

from reservations import api, views

urlpatterns = [
    path("reservations/", views.timeline, name="reservations"),
    path("reservations/book/", views.book, name="book"),
    path("reservations/find/", views.find, name="find"),
    path("reservations/mine/", views.mine, name="my-reservations"),
    path("reservations/calendar/", views.new_calendar_address, name="new-calendar-address"),
    path("reservations/<uuid:booking>/", views.booking_detail, name="booking"),
    path("reservations/<uuid:booking>/change/", views.change, name="change-booking"),
    path("reservations/<uuid:booking>/cancel/", views.cancel, name="cancel-booking"),
    path("reservations/<uuid:booking>/preempt/", views.preempt, name="preempt-booking"),
    path("ical/<str:token>.ics", views.ical_feed, name="ical"),
    path("api/reservations/", api.BookingList.as_view(), name="api-reservations"),
    path("api/reservations/holders/", api.Holders.as_view(), name="api-holders"),
    path("api/reservations/find/", api.Find.as_view(), name="api-find"),
    path("api/reservations/timeline/", api.TimelineView.as_view(), name="api-timeline"),
    path("api/reservations/quota/", api.Quota.as_view(), name="api-quota"),
    path("api/reservations/events/", api.Events.as_view(), name="api-events"),
    path("api/reservations/<uuid:booking>/", api.BookingDetail.as_view(), name="api-booking"),
    path("api/reservations/<uuid:booking>/preempt/", api.Preempt.as_view(), name="api-preempt"),
]
