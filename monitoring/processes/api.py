"""POST /api/processes/stop/: ask the node worker to end one GPU process (the owner's own, or any for an admin).

A process of a running fleet run is not ended alone: the whole run is asked to stop, as its cancel does
(the answer's ``run`` names it and ``detail`` says so).
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet.api.errors import ErrorSerializer, error_body
from monitoring.processes.models import ProcessStop
from monitoring.processes.stopping import StopRefused, request_stop, run_process_count


class StopRequestSerializer(serializers.Serializer):
    """Which process: the GPU's UUID and the pid its latest sample reports."""

    gpu = serializers.CharField(max_length=96)
    pid = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
    run = serializers.IntegerField(
        min_value=1,
        max_value=2**31 - 1,
        required=False,
        help_text="The run you expect the process to belong to; when given and it does not (any more), 409 and "
        "nothing is ended.",
    )


class ProcessStopSerializer(serializers.ModelSerializer):
    """A request to end a process and how it went."""

    node = serializers.CharField(source="node.hostname", default=None)
    gpu = serializers.CharField(source="gpu.uuid", default=None)
    requested_by = serializers.CharField(source="requested_by.get_username", default=None)
    run = serializers.IntegerField(
        source="run_id", allow_null=True, help_text="The run this process belonged to, which is being stopped whole."
    )
    detail = serializers.SerializerMethodField(help_text="What the request does, in a sentence.")

    class Meta:
        model = ProcessStop
        fields = ["id", "node", "gpu", "pid", "os_user", "cmdline", "grace_s", "status", "error", "requested_by"]
        fields += ["requested_at", "finished_at", "run", "detail"]

    def get_detail(self, stop: ProcessStop) -> str:
        return describe(stop)


def describe(stop: ProcessStop) -> str:
    """One sentence for the page and the API: what ending this process does."""
    host = stop.node.hostname if stop.node else "its node"
    if stop.run_id is None:
        return f"Asked {host} to end pid {stop.pid} ({stop.cmdline or 'no command'})."
    count = run_process_count(stop.run_id)
    processes = f"{count} process{'es' if count != 1 else ''}"
    return (
        f"Pid {stop.pid} belongs to run #{stop.run_id}: this ends run #{stop.run_id} ({processes}), as Cancel "
        "does: SIGTERM (built-in workloads save a checkpoint), then SIGKILL after the grace period."
    )


class StopView(APIView):
    @extend_schema(
        request=StopRequestSerializer,
        responses={202: ProcessStopSerializer, 409: ErrorSerializer},
        summary="End a GPU process (a running run's process: stop its run)",
    )
    def post(self, request: Request) -> Response:
        query = StopRequestSerializer(data=request.data)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        try:
            stop = request_stop(request.user, data["gpu"], data["pid"], data.get("run"))
        except StopRefused as refused:
            if refused.status == 409:
                return Response(error_body(str(refused)), status=status.HTTP_409_CONFLICT)
            raise (PermissionDenied if refused.forbidden else NotFound)(str(refused)) from None
        return Response(ProcessStopSerializer(stop).data, status=status.HTTP_202_ACCEPTED)
