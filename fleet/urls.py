"""Top-level URLs: each app brings its own."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from fleet import views
from fleet.api.root import APIRoot

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", APIRoot.as_view(), name="api-root"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger_ui.html"),
        name="api-docs",
    ),
    path("", include("fleet.app_urls")),
    path("", include("monitoring.urls")),
    path("", include("training.urls")),
]

handler404 = "fleet.api.errors.not_found"
handler500 = "fleet.api.errors.server_error"
