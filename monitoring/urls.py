"""The monitoring app's pages (the `monitoring:` namespace); its API routes are in api_urls.py."""

from django.urls import include, path

from monitoring.alerts import silence_views
from monitoring.alerts import views as alerts
from monitoring.costs import views as costs
from monitoring.health import api as health_api
from monitoring.health import views as health
from monitoring.live import api
from monitoring.notify import views as notify
from monitoring.processes import views as processes
from monitoring.prometheus import views as prometheus

app_name = "monitoring"

urlpatterns = [
    path("metrics", prometheus.metrics, name="metrics"),
    path("metrics/nodes/<str:hostname>", prometheus.node_metrics, name="metrics_node"),
    path("metrics/server", prometheus.server_metrics, name="metrics_server"),
    path("metrics/targets", prometheus.targets, name="metrics_targets"),
    path("api/fleet/", api.FleetView.as_view(), name="api-fleet"),
    path("api/gpus/<str:uuid>/", api.GPUView.as_view(), name="api-gpu"),
    path("api/gpus/<str:uuid>/series/", api.GPUSeriesView.as_view(), name="api-gpu-series"),
    path("api/gpus/<str:uuid>/health/", health_api.GPUHealthView.as_view(), name="api-gpu-health"),
    path("api/gpus/<str:uuid>/burnins/", health_api.GPUBurnInsView.as_view(), name="api-gpu-burnins"),
    path("api/gpus/<str:uuid>/burnin/", health_api.GPUBurnInStartView.as_view(), name="api-gpu-burnin"),
    path("api/nodes/<str:hostname>/burnin/", health_api.NodeBurnInStartView.as_view(), name="api-node-burnin"),
    path("fleet/gpus/<str:uuid>/burnin/", health.burn_in_gpu, name="gpu_burnin"),
    path("fleet/nodes/<str:hostname>/burnin/", health.burn_in_node, name="node_burnin"),
    path("processes/", processes.processes, name="processes"),
    path("processes/stop/", processes.stop, name="process_stop"),
    path("alerts/", alerts.listing, name="alerts"),
    path("alerts/<int:pk>/", alerts.detail, name="alert"),
    path("alerts/<int:pk>/acknowledge/", alerts.acknowledge, name="alert_acknowledge"),
    path("alerts/<int:pk>/snooze/", alerts.snooze, name="alert_snooze"),
    path("alerts/settings/", notify.settings_page, name="alert_settings"),
    path("alerts/silences/", silence_views.silence_list, name="silences"),
    path("alerts/silences/<int:pk>/expire/", silence_views.silence_expire, name="silence_expire"),
    *notify.destination_urls(),  # a transport's destinations (webhooks): remove, pause or enable
    path("notifications/", notify.center, name="notifications"),
    path("notifications/read/", notify.mark_read, name="notifications_read"),
    path("costs/", costs.costs, name="costs"),
    path("", include("monitoring.api_urls")),
]
