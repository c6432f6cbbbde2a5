"""JSON API of GPU health: a GPU's burn-in records (paged) and its health history."""

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.api.pagination import Pages, paginated
from fleet.models import GPU
from monitoring.health.history import HISTORY_DAYS, MEMORY_COUNTERS, gpu_history
from monitoring.health.serializers import BurnInSerializer, GPUHealthSerializer
from monitoring.health.status import health_problems

MAX_DAYS = 90


class HealthQuerySerializer(serializers.Serializer):
    days = serializers.IntegerField(required=False, default=HISTORY_DAYS, min_value=1, max_value=MAX_DAYS)


class GPUBurnInsView(APIView):
    pagination_class = Pages

    @extend_schema(responses=BurnInSerializer(many=True), summary="A GPU's burn-in records, newest first")
    def get(self, request: Request, uuid: str) -> Response:
        gpu = get_object_or_404(GPU, uuid=uuid)
        return paginated(self, request, gpu.burnins.select_related("gpu"), BurnInSerializer)


class GPUHealthView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("days", OpenApiTypes.INT, description=f"1 to {MAX_DAYS}", default=HISTORY_DAYS)],
        responses=GPUHealthSerializer,
        summary="A GPU's health: problems now, memory counters, last burn-in, XID errors and memory changes",
    )
    def get(self, request: Request, uuid: str) -> Response:
        gpu = get_object_or_404(GPU, uuid=uuid)
        query = HealthQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        history = gpu_history(gpu, days=query.validated_data["days"])
        last = gpu.burnins.judged().first()
        state = {key: getattr(gpu, key) for key in MEMORY_COUNTERS}
        payload = {
            "gpu": gpu.uuid,
            "since": history.since,
            "problems": health_problems(state, last),
            "memory": state,
            "last_burnin": last,
            "xid_events": history.xid_events,
            "memory_changes": history.memory_changes,
        }
        return Response(GPUHealthSerializer(payload).data)
