"""JSON API of the live fleet: nodes with GPUs and their latest state, and GPU time series."""

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inventory.models import GPU
from monitoring.live.charts import CHART_METRICS, RANGES, gpu_series
from monitoring.live.serializers import FleetSerializer, GPUSerializer
from monitoring.live.state import fleet_payload, gpu_payload


class SeriesQuerySerializer(serializers.Serializer):
    """?metrics=util_gpu,power_w&range=6h"""

    metrics = serializers.CharField(required=False, default=",".join(CHART_METRICS))
    range = serializers.ChoiceField(choices=list(RANGES), required=False, default="15m")

    def validate_metrics(self, value: str) -> list[str]:
        metrics = [m.strip() for m in value.split(",") if m.strip()]
        unknown = [m for m in metrics if m not in CHART_METRICS]
        if unknown or not metrics:
            raise serializers.ValidationError(
                f"unknown metric {', '.join(unknown) or '(none given)'}; choose from {', '.join(CHART_METRICS)}"
            )
        return list(dict.fromkeys(metrics))


SeriesSerializer = inline_serializer(
    "GPUSeries",
    {
        "gpu": serializers.CharField(),
        "range": serializers.ChoiceField(choices=list(RANGES)),
        "table": serializers.ChoiceField(choices=["raw", "minute", "hour"], help_text="The table read."),
        "step_s": serializers.FloatField(help_text="Seconds between points (the sample interval or bucket)."),
        "live": serializers.BooleanField(help_text="Whether the page extends this range with live updates."),
        "start": serializers.FloatField(help_text="UNIX seconds."),
        "end": serializers.FloatField(help_text="UNIX seconds."),
        "t": serializers.ListField(child=serializers.FloatField(), help_text="Point times, UNIX seconds."),
        "series": serializers.DictField(
            child=serializers.ListField(child=serializers.FloatField(allow_null=True)),
            help_text="Metric → values aligned with t; null where the GPU reported nothing (a gap).",
        ),
    },
)


class FleetView(APIView):
    @extend_schema(responses=FleetSerializer, summary="Every node with its GPUs and their latest state")
    def get(self, request: Request) -> Response:
        return Response(fleet_payload())


class GPUView(APIView):
    @extend_schema(responses=GPUSerializer, summary="One GPU with its latest state")
    def get(self, request: Request, uuid: str) -> Response:
        payload = gpu_payload(uuid)
        if payload is None:
            raise Http404("No GPU with this UUID.")
        return Response(payload)


class GPUSeriesView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "metrics", OpenApiTypes.STR, description=f"Comma-separated, from: {', '.join(CHART_METRICS)}"
            ),
            OpenApiParameter("range", OpenApiTypes.STR, enum=list(RANGES), default="15m"),
        ],
        responses=SeriesSerializer,
        summary="One GPU's metrics over a range, from raw samples or rollups",
    )
    def get(self, request: Request, uuid: str) -> Response:
        gpu = get_object_or_404(GPU, uuid=uuid)
        query = SeriesQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(gpu_series(gpu, query.validated_data["metrics"], query.validated_data["range"]))
