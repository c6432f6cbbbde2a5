"""POST /api/processes/stop/: ask the node worker to end one GPU process (the owner's own, or any for an admin)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from monitoring.processes.models import ProcessStop
from monitoring.processes.stopping import StopRefused, request_stop


class StopRequestSerializer(serializers.Serializer):
    """Which process: the GPU's UUID and the pid its latest sample reports."""

    gpu = serializers.CharField(max_length=96)
    pid = serializers.IntegerField(min_value=1, max_value=2**31 - 1)


class ProcessStopSerializer(serializers.ModelSerializer):
    """A request to end a process and how it went."""

    node = serializers.CharField(source="node.hostname", default=None)
    gpu = serializers.CharField(source="gpu.uuid", default=None)
    requested_by = serializers.CharField(source="requested_by.get_username", default=None)

    class Meta:
        model = ProcessStop
        fields = ["id", "node", "gpu", "pid", "os_user", "cmdline", "grace_s", "status", "error", "requested_by"]
        fields += ["requested_at", "finished_at"]


class StopView(APIView):
    @extend_schema(request=StopRequestSerializer, responses={202: ProcessStopSerializer}, summary="End a GPU process")
    def post(self, request: Request) -> Response:
        query = StopRequestSerializer(data=request.data)
        query.is_valid(raise_exception=True)
        try:
            stop = request_stop(request.user, query.validated_data["gpu"], query.validated_data["pid"])
        except StopRefused as refused:
            raise (PermissionDenied if refused.forbidden else NotFound)(str(refused)) from None
        return Response(ProcessStopSerializer(stop).data, status=status.HTTP_202_ACCEPTED)
