"""GET /api/: the API's front door, listing each endpoint with its address."""

from django.urls import reverse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

# name → URL name (or a path template where the address needs a key); a new endpoint adds one line here
# (a test checks every path of the schema is under one of these).
ENDPOINTS = {
    "schema": "api-schema",
    "docs": "api-docs",
    "fleet": "monitoring:api-fleet",
    "gpu": "/api/gpus/{uuid}/",
    "node_burnin": "/api/nodes/{hostname}/burnin/",
    "token": "fleet:api-token",
    "token_current": "fleet:api-token-current",
    "reservations": "fleet:api-reservations",
    "holders": "fleet:api-holders",
    "find": "fleet:api-find",
    "timeline": "fleet:api-timeline",
    "quota": "fleet:api-quota",
    "reservation_events": "fleet:api-events",
    "runs": "training:api-run-list",
    "sweeps": "training:api-sweep-list",
    "workloads": "training:api-workload-list",
    "alerts": "monitoring:api-alert-list",
    "silences": "monitoring:api-silence-list",
    "notifications": "monitoring:api-notification-list",
    "alert_preferences": "monitoring:api-alert-preferences",
    "webhooks": "monitoring:api-webhook-list",
    "idle_policies": "monitoring:api-idle-policy-list",
    "user_budgets": "monitoring:api-user-budget-list",
    "costs": "monitoring:api-costs",
    "process_stop": "monitoring:api-process-stop",
}


def endpoint_urls(request) -> dict[str, str]:
    return {name: request.build_absolute_uri(endpoint_path(name)) for name in ENDPOINTS}


def endpoint_path(name: str) -> str:
    target = ENDPOINTS[name]
    return target if target.startswith("/") else reverse(target)


class APIRoot(APIView):
    """Where each part of the API lives; behind the login like every other endpoint."""

    @extend_schema(
        summary="The API's endpoints",
        responses=inline_serializer(
            "APIRoot",
            {
                "name": serializers.CharField(),
                "version": serializers.CharField(),
                "endpoints": serializers.DictField(child=serializers.URLField()),
            },
        ),
    )
    def get(self, request):
        return Response({"name": "GPU Fleet API", "version": "1", "endpoints": endpoint_urls(request)})
