"""The runs API: list, launch, inspect, cancel, follow progress and logs; sweeps; cost estimates."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from fleet.api.errors import ErrorSerializer, error_body
from fleet.api.pagination import Pages, paginated
from fleet.api.text import WHOLE_MAX, whole_number
from inventory.models import GPU, GPUModel, Node, Project
from training import environments, strategies
from training.cancel import CancelRefused, request_cancel
from training.choices import RunStatus, SweepMetric, SweepMode
from training.launching import commands
from training.launching.launch import LaunchRequest, check_launch, launch, launch_estimate
from training.launching.params import LAUNCH_DEFAULTS
from training.launching.resume_run import ResumeRefused, resume
from training.models import COMMAND, SCRIPT, Run, Sweep
from training.profiling import downloads
from training.run_files import artifacts
from training.serializers import (
    RunLogSerializer,
    RunMetricSerializer,
    RunProfileSerializer,
    RunSerializer,
    SweepSerializer,
    run_details,
)
from training.sweeps.placing import cancel_sweep
from training.sweeps.search import SweepRequest, check_sweep, launch_sweep
from training.web.access import can_change, visible_runs, visible_sweeps
from training.workloads import WORKLOADS

PAGE_MAX = 1000


def gpu_field() -> serializers.SlugRelatedField:
    return serializers.SlugRelatedField(
        slug_field="uuid",
        queryset=GPU.objects.select_related("node", "model"),
        many=True,
        default=list,
        help_text="GPU UUIDs, as NVML reports them (GPU-…).",
    )


def as_sent(schema: dict, default, help_text: str) -> serializers.Field:
    """A command field passed on as sent (only null is refused here): training/launching/commands.py checks it,
    as it does for the form, and ``schema`` says what that check accepts."""

    @extend_schema_field(schema)
    class AsSent(serializers.Field):
        def to_internal_value(self, data):
            return data

        def to_representation(self, value):
            return value

    return AsSent(required=False, default=default, help_text=help_text)


def text_schema(limit: int) -> dict:
    return {"type": "string", "maxLength": limit}


class LaunchSerializer(serializers.Serializer):
    """What a launch takes; hyperparameters are checked by the same rules as the launch form."""

    name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    project = serializers.SlugRelatedField(
        slug_field="name", queryset=Project.objects.all(), required=False, allow_null=True, default=None
    )
    workload = serializers.CharField(
        help_text=f"A built-in workload, {SCRIPT!r} with `script`, or {COMMAND!r} with `command` or `shell_line`."
    )
    script = serializers.CharField(required=False, allow_blank=True, default="")
    strategy = serializers.ChoiceField(choices=strategies.choices(), default=LAUNCH_DEFAULTS["strategy"])
    gpus = gpu_field()
    node = serializers.SlugRelatedField(
        slug_field="hostname", queryset=Node.objects.all(), required=False, allow_null=True, default=None
    )
    processes = serializers.IntegerField(required=False, allow_null=True, default=None, help_text="Per node.")
    hyperparameters = serializers.DictField(required=False, default=dict)
    booking = serializers.UUIDField(
        required=False,
        allow_null=True,
        default=None,
        help_text="One of your bookings: the run takes its GPUs and, if it starts later, waits for it (scheduled).",
    )
    override = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Admins only: launch even on GPUs whose memory someone else's processes hold; recorded on the run.",
    )
    profiler = serializers.DictField(
        required=False,
        allow_null=True,
        default=None,
        help_text='Off when absent. {"wait": 5, "warmup": 2, "active": 5, "ranks": "0"} profiles a built-in '
        'workload\'s steps with the torch profiler (ranks "0" or "all"); {"ranks": "0"} a script with cProfile.',
    )
    checkpoint_dir = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=1000,
        help_text="Where its checkpoints go, inside RUN_CHECKPOINT_DIR (relative to it); default run-<uuid> there.",
    )

    command = as_sent(
        {"type": "array", "items": text_schema(commands.MAX_COMMAND_CHARS), "maxItems": commands.MAX_ARGS},
        None,
        f"Workload {COMMAND!r}: the argument list, run without a shell (a first word `python` is the environment's "
        f"interpreter); at most {commands.MAX_COMMAND_CHARS:,} characters in all, no NUL.",
    )
    shell_line = as_sent(
        text_schema(commands.MAX_COMMAND_CHARS),
        "",
        f"Workload {COMMAND!r}, instead of `command`: a line run as `bash -lc LINE`.",
    )
    workdir = as_sent(
        text_schema(commands.MAX_WORKDIR_CHARS), "", "An absolute path on the node; empty: the run's own directory."
    )
    variables = as_sent(
        {
            "type": "object",
            "additionalProperties": text_schema(commands.MAX_VALUE_CHARS),
            "maxProperties": commands.MAX_VARIABLES,
        },
        dict,
        "Environment variables, {NAME: value}; names are letters, digits and _, not starting with a digit. Values of "
        "names holding TOKEN, KEY, SECRET, PASSWORD, PASSWD or CREDENTIAL are never shown after the launch.",
    )
    setup = as_sent(
        text_schema(commands.MAX_SETUP_CHARS),
        "",
        f"Commands run first in the same environment and directory; at most {commands.MAX_SETUP_LINES} lines.",
    )
    env_kind = as_sent(
        {"type": "string", "enum": list(environments.names())}, "fleet", "Where the command runs: its environment."
    )
    env_ref = as_sent(
        text_schema(commands.MAX_REF_CHARS),
        "",
        "The environment's path on the node (a venv or conda env) or its image; empty for the fleet's own.",
    )

    def to_request(self, user) -> LaunchRequest:
        return LaunchRequest(user=user, **self.validated_data)


class SweepLaunchSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    project = serializers.SlugRelatedField(
        slug_field="name", queryset=Project.objects.all(), required=False, allow_null=True, default=None
    )
    workload = serializers.CharField()
    mode = serializers.ChoiceField(choices=SweepMode.choices)
    space = serializers.DictField(help_text='e.g. {"lr": [0.001, 0.01]} or {"lr": {"min": 1e-4, "max": 1e-2}}')
    samples = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1)
    seed = serializers.IntegerField(required=False, default=0, min_value=0)
    metric = serializers.ChoiceField(choices=SweepMetric.choices, default=SweepMetric.ACCURACY)
    base = serializers.DictField(required=False, default=dict, help_text="Fixed hyperparameters of every run.")
    gpus = gpu_field()
    gpu_model = serializers.SlugRelatedField(
        slug_field="name",
        queryset=GPUModel.objects.all(),
        required=False,
        allow_null=True,
        default=None,
        help_text="With gpu_count: use any free GPUs of this model.",
    )
    gpu_count = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=1,
        max_value=10000,
        help_text="How many GPUs the sweep uses at once; its runs start as GPUs become free.",
    )
    node = serializers.SlugRelatedField(
        slug_field="hostname", queryset=Node.objects.all(), required=False, allow_null=True, default=None
    )


class EstimateSerializer(serializers.Serializer):
    rate_per_hour = serializers.CharField(allow_null=True)
    seconds = serializers.FloatField(allow_null=True)
    cost = serializers.CharField(allow_null=True)
    basis = serializers.CharField()


def field_errors(errors: dict[str, str]) -> ValidationError:
    """Our checks' messages shaped like DRF's own: a list of messages per field."""
    return ValidationError({field: [message] for field, message in errors.items()})


def after_parameter(name: str) -> OpenApiParameter:
    return OpenApiParameter(
        name,
        {"type": "integer", "minimum": 0, "maximum": WHOLE_MAX},
        description=f"Only {name.split('_')[0]}s with a larger id (to follow a run).",
    )


class RunFilters(serializers.Serializer):
    """The list's filters; an unknown value is a 400, not an empty or unfiltered list."""

    show = serializers.ChoiceField(
        choices=["mine", "running"], required=False, help_text="Only yours, or only unfinished."
    )
    status = serializers.ChoiceField(choices=RunStatus.choices, required=False, help_text="Only runs in this state.")


class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Runs you may see, newest first: your own and your projects' (staff: all)."""

    serializer_class = RunSerializer
    lookup_value_regex = "[0-9]+"

    queryset = Run.objects.none()  # the schema's path types; get_queryset() says what a user sees

    def get_queryset(self):
        runs = run_details(visible_runs(self.request.user))
        if self.action != "list":
            return runs
        filters = RunFilters(data=self.request.query_params.dict())  # a plain dict: an empty value is not "unset"
        filters.is_valid(raise_exception=True)
        show, wanted = filters.validated_data.get("show"), filters.validated_data.get("status")
        if show == "mine":
            runs = runs.filter(owner=self.request.user)
        elif show == "running":
            runs = runs.filter(status__in=RunStatus.unfinished())
        if wanted:
            runs = runs.filter(status=wanted)
        return runs

    @extend_schema(parameters=[RunFilters])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(request=LaunchSerializer, responses={201: RunSerializer})
    def create(self, request):
        """Launch a run: everything is checked before anything is queued; errors come back by field."""
        plan = self._plan(request)
        run = launch(plan)
        return Response(RunSerializer(self.get_queryset().get(pk=run.pk)).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=LaunchSerializer, responses={200: EstimateSerializer})
    @action(detail=False, methods=["post"])
    def estimate(self, request):
        """What a launch would cost: the hourly rate, and a total when past runs tell how long it takes."""
        return Response(launch_estimate(self._plan(request)).as_dict())

    def _plan(self, request):
        launch_input = LaunchSerializer(data=request.data)
        launch_input.is_valid(raise_exception=True)
        plan, errors = check_launch(launch_input.to_request(request.user))
        if errors:
            raise field_errors(errors)
        return plan

    @extend_schema(request=None, responses={202: RunSerializer, 409: ErrorSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Stop the run (owner or staff): SIGTERM to its processes, SIGKILL after the grace period."""
        run = self.get_object()
        if not can_change(request.user, run):
            raise PermissionDenied("Only the owner of a run or an admin may cancel it.")
        try:
            request_cancel(run, request.user)
        except CancelRefused as refused:
            return Response(error_body(refused), status=status.HTTP_409_CONFLICT)
        return Response(RunSerializer(self.get_queryset().get(pk=run.pk)).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        request=None, responses={201: RunSerializer, 400: ErrorSerializer, 403: ErrorSerializer, 409: ErrorSerializer}
    )
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        """Continue an ended run from its last checkpoint (owner only): a new run, same hyperparameters and GPUs."""
        run = self.get_object()
        try:
            resumed = resume(run, request.user)
        except ResumeRefused as refused:
            if refused.forbidden:
                raise PermissionDenied(str(refused)) from None
            if refused.errors:
                raise field_errors(refused.errors) from None
            return Response(error_body(refused), status=status.HTTP_409_CONFLICT)
        return Response(RunSerializer(self.get_queryset().get(pk=resumed.pk)).data, status=status.HTTP_201_CREATED)

    # Read with the ?after= cursor, not in pages (docs/api.md): the answer is the bare list the schema says.
    @extend_schema(parameters=[after_parameter("after")], responses=RunMetricSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None)
    def metrics(self, request, pk=None):
        """Progress points (step, epoch, loss, accuracy, samples/s), oldest first, at most 1000 a call."""
        rows = self.get_object().metrics.filter(id__gt=self._after(request)).order_by("id")[:PAGE_MAX]
        return Response(RunMetricSerializer(rows, many=True).data)

    @extend_schema(parameters=[after_parameter("after")], responses=RunLogSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None)
    def logs(self, request, pk=None):
        """Log lines, oldest first, at most 1000 a call; pass the last id seen as ``after`` to follow."""
        rows = self.get_object().logs.filter(id__gt=self._after(request)).order_by("id")[:PAGE_MAX]
        return Response(RunLogSerializer(rows, many=True).data)

    @extend_schema(responses=RunProfileSerializer(many=True))
    @action(detail=True, methods=["get"])
    def profiles(self, request, pk=None):
        """What the profiler recorded, one entry per profiled rank: top operators (or functions), step-time split."""
        rows = self.get_object().profiles.defer("data").order_by("rank")
        return paginated(self, request, rows, RunProfileSerializer)

    @extend_schema(
        parameters=[OpenApiParameter("rank", int, OpenApiParameter.PATH, description="The profiled rank.")],
        responses={
            (200, "application/json"): OpenApiTypes.OBJECT,
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
        },
    )
    @action(detail=True, methods=["get"], url_path=r"profiles/(?P<rank>[0-9]+)/file", url_name="profile-file")
    def profile_file(self, request, pk=None, rank=None):
        """A profiled rank's file: the Chrome trace (torch; open it in Perfetto or chrome://tracing) or pstats."""
        return downloads.response(self.get_object(), int(rank))

    @extend_schema(
        parameters=[OpenApiParameter("name", str, OpenApiParameter.PATH, description="model.pt or metrics.csv.")],
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY, 404: ErrorSerializer},
    )
    @action(detail=True, methods=["get"], url_path=r"artifacts/(?P<name>[A-Za-z0-9._-]+)", url_name="artifact")
    def artifact(self, request, pk=None, name=None):
        """Download one of the run's artifacts (listed in the run's ``artifacts``): anyone who may see the run."""
        return artifacts.download(artifacts.of_run_or_404(self.get_object(), name))

    @staticmethod
    def _after(request) -> int:
        value = whole_number(request.query_params.get("after", "0"))
        if value is None:
            raise ValidationError({"after": "Give the id of the last row you have, a whole number."})
        return value


class SweepViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Sweeps you may see, each with its runs sorted best first by its metric."""

    serializer_class = SweepSerializer
    lookup_value_regex = "[0-9]+"

    queryset = Sweep.objects.none()  # the schema's path types; get_queryset() says what a user sees

    def get_queryset(self):
        sweeps = visible_sweeps(self.request.user).select_related("owner", "project", "gpu_model")
        return sweeps.prefetch_related("runs__gpus__node", "pool__node")

    @extend_schema(request=SweepLaunchSerializer, responses={201: SweepSerializer})
    def create(self, request):
        """Start a grid or random search: N single-process runs queued over the given GPUs."""
        sweep_input = SweepLaunchSerializer(data=request.data)
        sweep_input.is_valid(raise_exception=True)
        sweep_request = SweepRequest(user=request.user, **sweep_input.validated_data)
        plans, errors = check_sweep(sweep_request)
        if errors:
            raise field_errors(errors)
        sweep = launch_sweep(sweep_request, plans)
        return Response(SweepSerializer(self.get_queryset().get(pk=sweep.pk)).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={202: SweepSerializer, 409: ErrorSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Cancel the sweep (owner or staff): no run is placed any more, and every unfinished run is cancelled."""
        sweep = self.get_object()
        if not can_change(request.user, sweep):
            raise PermissionDenied("Only the owner of a sweep or an admin may cancel it.")
        try:
            cancel_sweep(sweep, request.user)
        except CancelRefused as refused:
            return Response(error_body(refused), status=status.HTTP_409_CONFLICT)
        return Response(SweepSerializer(self.get_queryset().get(pk=sweep.pk)).data, status=status.HTTP_202_ACCEPTED)


class WorkloadSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    strategies = serializers.ListField(child=serializers.CharField())
    params = serializers.ListField(child=serializers.CharField())
    defaults = serializers.DictField()


class WorkloadViewSet(viewsets.ViewSet):
    """The built-in workloads a run can start, with their parameters and defaults."""

    pagination_class = Pages

    @extend_schema(responses=WorkloadSerializer(many=True))
    def list(self, request):
        rows = [
            {
                "name": name,
                "description": spec.description,
                "strategies": list(spec.strategies),
                "params": list(spec.params),
                "defaults": spec.defaults,
            }
            for name, spec in WORKLOADS.items()
        ]
        return paginated(self, request, rows, WorkloadSerializer)
