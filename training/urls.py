"""The training app's pages (the `training:` namespace) and its API routes."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from training.web import api, views

app_name = "training"

router = SimpleRouter()
router.register("runs", api.RunViewSet, basename="api-run")
router.register("sweeps", api.SweepViewSet, basename="api-sweep")
router.register("workloads", api.WorkloadViewSet, basename="api-workload")

urlpatterns = [
    path("runs/", views.runs, name="runs"),
    path("runs/new/", views.launch_run, name="launch"),
    path("runs/compare/", views.compare, name="compare"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/cancel/", views.cancel, name="cancel"),
    path("runs/<int:pk>/profiles/<int:rank>/file/", views.profile_file, name="profile_file"),
    path("runs/<int:pk>/resume/", views.resume_view, name="resume"),
    path("runs/<int:pk>/artifacts/<str:name>/", views.artifact, name="artifact"),
    path("sweeps/new/", views.new_sweep, name="new_sweep"),
    path("sweeps/<int:pk>/", views.sweep_detail, name="sweep"),
    path("sweeps/<int:pk>/cancel/", views.cancel_sweep_view, name="cancel_sweep"),
    path("api/", include(router.urls)),
]
