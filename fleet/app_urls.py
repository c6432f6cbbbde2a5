"""The fleet namespace: the live fleet pages and the reservations."""

from django.urls import include, path

from accounts import api as token_api
from accounts import views as token_views
from monitoring.live import views

app_name = "fleet"

urlpatterns = [
    path("fleet/", views.fleet, name="fleet"),
    path("fleet/nodes/<str:hostname>/", views.node, name="node"),
    path("fleet/gpus/<str:uuid>/", views.gpu, name="gpu"),
    path("settings/tokens/", token_views.tokens_page, name="tokens"),
    path("settings/tokens/<int:pk>/revoke/", token_views.token_revoke, name="token_revoke"),
    path("api/token/", token_api.TokenCreateView.as_view(), name="api-token"),
    path("api/token/current/", token_api.CurrentTokenView.as_view(), name="api-token-current"),
    path("", include("reservations.urls")),
]
