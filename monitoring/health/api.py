"""JSON API of GPU health: a GPU's burn-in records (paged) and its health history; admins start burn-ins."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.api.errors import ErrorSerializer, error_body
from fleet.api.pagination import Pages, paginated
from inventory.models import GPU, Node
from monitoring.health.burnin_launch import BurnInRefused, burn_in
from monitoring.health.history import HISTORY_DAYS, MEMORY_COUNTERS, gpu_history
from monitoring.health.serializers import BurnInSerializer, GPUHealthSerializer
from monitoring.health.status import health_problems
from monitoring.storage import latest
from training.models import Run
from training.serializers import RunSerializer, run_details

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
        parameters=[
            OpenApiParameter(
                "days",
                {"type": "integer", "minimum": 1, "maximum": MAX_DAYS},
                description=f"1 to {MAX_DAYS}",
                default=HISTORY_DAYS,
            )
        ],
        responses=GPUHealthSerializer,
        summary="A GPU's health: problems now, memory counters, last burn-in, XID errors and memory changes",
    )
    def get(self, request: Request, uuid: str) -> Response:
        gpu = get_object_or_404(GPU.objects.select_related("state"), uuid=uuid)
        query = HealthQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        history = gpu_history(gpu, days=query.validated_data["days"])
        last = gpu.burnins.judged().first()
        state = {key: getattr(latest.of(gpu), key) for key in MEMORY_COUNTERS}
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


class BurnInsQueuedSerializer(serializers.Serializer):
    runs = RunSerializer(many=True, help_text="One queued burn-in run per GPU, in node and GPU order.")


class BurnInStartView(APIView):
    """Admins only: queue a burn-in on each GPU, all or nothing (monitoring/health/burnin_launch.py)."""

    permission_classes = [permissions.IsAdminUser]

    def start(self, gpus) -> Response:
        try:
            runs = burn_in(self.request.user, gpus)
        except BurnInRefused as refused:
            if refused.forbidden:
                raise PermissionDenied(str(refused)) from None
            return Response(error_body(refused, {"gpus": refused.reasons}), status=status.HTTP_409_CONFLICT)
        rows = run_details(Run.objects.filter(pk__in=[run.pk for run in runs]).order_by("pk"))
        return Response(BurnInsQueuedSerializer({"runs": rows}).data, status=status.HTTP_201_CREATED)


QUEUED = {201: BurnInsQueuedSerializer, 409: ErrorSerializer}


class GPUBurnInStartView(BurnInStartView):
    @extend_schema(request=None, responses=QUEUED, summary="Burn in this GPU (admins)")
    def post(self, request: Request, uuid: str) -> Response:
        return self.start([get_object_or_404(GPU.objects.select_related("node"), uuid=uuid)])


class NodeBurnInStartView(BurnInStartView):
    @extend_schema(request=None, responses=QUEUED, summary="Burn in every GPU of this node (admins)")
    def post(self, request: Request, hostname: str) -> Response:
        node = get_object_or_404(Node, hostname=hostname)
        return self.start(node.gpus.select_related("node"))
