from django.urls import path

from fleet import reservation_api as api
from fleet import reservation_views as reservations
from fleet import views

app_name = "fleet"

urlpatterns = [
    path("fleet/", views.fleet, name="fleet"),
    path("reservations/", reservations.timeline, name="reservations"),
    path("reservations/book/", reservations.book, name="book"),
    path("reservations/find/", reservations.find, name="find"),
    path("reservations/mine/", reservations.mine, name="my-reservations"),
    path("reservations/calendar/", reservations.new_calendar_address, name="new-calendar-address"),
    path("reservations/<uuid:booking>/", reservations.booking_detail, name="booking"),
    path("reservations/<uuid:booking>/change/", reservations.change, name="change-booking"),
    path("reservations/<uuid:booking>/cancel/", reservations.cancel, name="cancel-booking"),
    path("reservations/<uuid:booking>/preempt/", reservations.preempt, name="preempt-booking"),
    path("ical/<str:token>.ics", reservations.ical_feed, name="ical"),
    path("api/reservations/", api.BookingList.as_view(), name="api-reservations"),
    path("api/reservations/holders/", api.Holders.as_view(), name="api-holders"),
    path("api/reservations/find/", api.Find.as_view(), name="api-find"),
    path("api/reservations/timeline/", api.TimelineView.as_view(), name="api-timeline"),
    path("api/reservations/quota/", api.Quota.as_view(), name="api-quota"),
    path("api/reservations/events/", api.Events.as_view(), name="api-events"),
    path("api/reservations/<uuid:booking>/", api.BookingDetail.as_view(), name="api-booking"),
    path("api/reservations/<uuid:booking>/preempt/", api.Preempt.as_view(), name="api-preempt"),
    path("fleet/nodes/<str:hostname>/", views.node, name="node"),
    path("fleet/gpus/<str:uuid>/", views.gpu, name="gpu"),
]
