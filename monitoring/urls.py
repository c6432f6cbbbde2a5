from django.urls import path

from fleet.views import placeholder
from monitoring import api, prometheus

app_name = "monitoring"

urlpatterns = [
    path("metrics", prometheus.metrics, name="metrics"),
    path("alerts/", placeholder("Alerts", "Idle processes, squatters, health and budget alerts."), name="alerts"),
    path("costs/", placeholder("Costs", "Spending by user, project, GPU model and month."), name="costs"),
    path("api/fleet/", api.FleetView.as_view(), name="api-fleet"),
    path("api/gpus/<str:uuid>/", api.GPUView.as_view(), name="api-gpu"),
    path("api/gpus/<str:uuid>/series/", api.GPUSeriesView.as_view(), name="api-gpu-series"),
]
