"""The monitoring app's JSON API (alerts, notifications, webhooks, costs)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from monitoring.alerts.api import AlertViewSet, IdlePolicyViewSet, SilenceViewSet, UserBudgetViewSet
from monitoring.costs.api import CostsView, UnderusedView
from monitoring.notify.api import NotificationViewSet, PreferenceView, destination_routes
from monitoring.processes.api import StopView

router = SimpleRouter()
router.register("api/alerts", AlertViewSet, basename="api-alert")
router.register("api/notifications", NotificationViewSet, basename="api-notification")
for prefix, viewset, basename in destination_routes():  # each transport's destinations: api/webhooks
    router.register(prefix, viewset, basename=basename)
router.register("api/silences", SilenceViewSet, basename="api-silence")
router.register("api/idle-policies", IdlePolicyViewSet, basename="api-idle-policy")
router.register("api/budgets/users", UserBudgetViewSet, basename="api-user-budget")

urlpatterns = [
    path("api/alert-preferences/", PreferenceView.as_view(), name="api-alert-preferences"),
    path("api/processes/stop/", StopView.as_view(), name="api-process-stop"),
    path("api/costs/", CostsView.as_view(), name="api-costs"),
    path("api/costs/underused/", UnderusedView.as_view(), name="api-costs-underused"),
    *router.urls,
]
