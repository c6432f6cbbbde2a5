from django.urls import path

from fleet.views import placeholder
from monitoring import prometheus

app_name = "monitoring"

urlpatterns = [
    path("metrics", prometheus.metrics, name="metrics"),
    path("alerts/", placeholder("Alerts", "Idle processes, squatters, health and budget alerts."), name="alerts"),
    path("costs/", placeholder("Costs", "Spending by user, project, GPU model and month."), name="costs"),
]
