"""How runs, their progress and logs, and sweeps look in the JSON API and in websocket messages."""

from django.db.models import Prefetch, QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from inventory.models import GPU
from training import run_cost
from training.choices import RunStatus
from training.dispatch.waiting import waiting_for
from training.models import Run, RunArtifact, RunLog, RunMetric, RunNode, RunProfile, Sweep
from training.run_files import checkpoint_dirs
from training.variables import SECRET_MASK, shown


class RunMetricSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunMetric
        fields = ["id", "ts", "step", "epoch", "loss", "accuracy", "samples_per_s", "gflops"]


class RunLogSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunLog
        fields = ["id", "node_rank", "ts", "line"]


class RunNodeSerializer(serializers.ModelSerializer):
    hostname = serializers.CharField(source="node.hostname")

    class Meta:
        model = RunNode
        fields = [
            "hostname",
            "rank",
            "gpu_indexes",
            "status",
            "pid",
            "worker",
            "heartbeat_at",
            "exit_code",
            "environment",
        ]


class RunGPUSerializer(serializers.ModelSerializer):
    """A run's GPU with its latest reported state (null where the agent reported nothing)."""

    node = serializers.CharField(source="node.hostname")
    model = serializers.CharField(source="model.name", allow_null=True, default=None)
    last_sample_at = serializers.DateTimeField(source="state.last_sample_at", allow_null=True, required=False)
    util_gpu = serializers.FloatField(source="state.util_gpu", allow_null=True, required=False)
    util_mem = serializers.FloatField(source="state.util_mem", allow_null=True, required=False)
    mem_used_mib = serializers.FloatField(source="state.mem_used_mib", allow_null=True, required=False)
    temp_c = serializers.FloatField(source="state.temp_c", allow_null=True, required=False)
    power_w = serializers.FloatField(source="state.power_w", allow_null=True, required=False)

    class Meta:
        model = GPU
        fields = [
            "id",
            "uuid",
            "node",
            "index",
            "model",
            "last_sample_at",
            "util_gpu",
            "util_mem",
            "mem_used_mib",
            "memory_total_mib",
            "temp_c",
            "power_w",
        ]


class ProgressSerializer(serializers.Serializer):
    step = serializers.IntegerField(allow_null=True)
    epoch = serializers.IntegerField(allow_null=True)
    loss = serializers.FloatField(allow_null=True)
    accuracy = serializers.FloatField(allow_null=True)
    samples_per_s = serializers.FloatField(allow_null=True)
    gflops = serializers.FloatField(allow_null=True, help_text="Burn-in runs only: GFLOP/s; null for training.")


class RunStateSerializer(serializers.ModelSerializer):
    """What changes while a run runs: sent to its watchers after every batch of progress."""

    status_label = serializers.CharField(source="get_status_display")
    status_colour = serializers.CharField()
    progress = ProgressSerializer(source="*")
    waiting_for = serializers.SerializerMethodField(help_text="What a run that has not started waits for.")

    class Meta:
        model = Run
        fields = [
            "id",
            "status",
            "status_label",
            "status_colour",
            "waiting_for",
            "error",
            "exit_code",
            "started_at",
            "first_step_at",
            "finished_at",
            "heartbeat_at",
            "cancel_requested_at",
            "progress",
            "result",
            "environment",
        ]

    def get_waiting_for(self, run: Run) -> str:
        return waiting_for(run) if run.status in (RunStatus.QUEUED, RunStatus.SCHEDULED) else ""


class RunArtifactSerializer(serializers.ModelSerializer):
    """A file of the run to download: ``download`` is its API address (the run page links its own)."""

    download = serializers.SerializerMethodField()

    class Meta:
        model = RunArtifact
        fields = ["name", "kind", "size_bytes", "created", "download"]

    def get_download(self, artifact: RunArtifact) -> str:
        return reverse("training:api-run-artifact", args=[artifact.run_id, artifact.name])


class CostSerializer(serializers.Serializer):
    so_far = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    rate_per_hour = serializers.DecimalField(max_digits=12, decimal_places=3, allow_null=True)
    gpu_hours = serializers.FloatField()


class CheckpointSerializer(serializers.Serializer):
    """A run's latest checkpoint as the training process reported it, and what its directory holds now."""

    directory = serializers.CharField()
    step = serializers.IntegerField(allow_null=True, help_text="The step it continues from when resumed.")
    saved_at = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True, help_text="periodic, or stop (saved when told to stop).")
    seconds = serializers.FloatField(allow_null=True, help_text="How long the save took.")
    size_bytes = serializers.IntegerField(allow_null=True, help_text="On disk now; null when there are none.")
    deleted_at = serializers.CharField(allow_null=True, help_text="When retention deleted them.")


def checkpoint_facts(run: Run) -> dict:
    reported = run.checkpoint or {}
    return {
        "directory": str(checkpoint_dirs.run_dir(run)),
        "step": reported.get("step"),
        "saved_at": reported.get("saved_at"),
        "reason": reported.get("reason"),
        "seconds": reported.get("seconds"),
        "size_bytes": checkpoint_dirs.size_bytes(run),
        "deleted_at": reported.get("deleted_at"),
    }


def run_details(runs: QuerySet[Run]) -> QuerySet[Run]:
    """The runs with what ``RunSerializer`` reads of their relations, fetched in a few queries for them all."""
    gpus = Prefetch("gpus", queryset=GPU.objects.select_related("node", "model", "state"))
    return runs.select_related("owner", "project").prefetch_related("nodes__node", "artifacts", gpus)


class RunSerializer(RunStateSerializer):
    """A run in full: what, where, how and what happened."""

    owner = serializers.CharField(source="owner.get_username")
    project = serializers.CharField(source="project.name", allow_null=True, default=None)
    nodes = RunNodeSerializer(many=True)
    gpus = RunGPUSerializer(many=True)
    artifacts = RunArtifactSerializer(many=True, read_only=True)
    cost = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    checkpoint = serializers.SerializerMethodField()
    resumed_from = serializers.PrimaryKeyRelatedField(
        read_only=True, allow_null=True, help_text="The run this one continues; null for a fresh run."
    )
    command = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="The argument list; empty for a shell line."
    )
    variables = serializers.SerializerMethodField(
        help_text=f"Variables set at launch; the value of a secret-looking name is always {SECRET_MASK!r}."
    )

    class Meta(RunStateSerializer.Meta):
        fields = [
            "id",
            "url",
            "name",
            "owner",
            "project",
            "sweep",
            "workload",
            "script",
            "strategy",
            "processes",
            "hyperparameters",
            "profiler",
            "nodes",
            "gpus",
            "artifacts",
            "rendezvous",
            "override",
            "created",
            "cost",
            "checkpoint",
            "resumed_from",
            "command",
            "shell_line",
            "workdir",
            "variables",
            "setup",
            "env_kind",
            "env_ref",
            *RunStateSerializer.Meta.fields[1:],
        ]

    @extend_schema_field(serializers.DictField(child=serializers.CharField()))
    def get_variables(self, run: Run) -> dict:
        return shown(run.variables)

    @extend_schema_field(CheckpointSerializer)
    def get_checkpoint(self, run: Run) -> dict:
        return CheckpointSerializer(checkpoint_facts(run)).data

    @extend_schema_field(CostSerializer)
    def get_cost(self, run: Run) -> dict:
        gpus = list(run.gpus.all())
        return CostSerializer(
            {
                "so_far": run_cost.run_cost(run),
                "rate_per_hour": run_cost.hourly_rate(gpus) if gpus else 0,
                "gpu_hours": run_cost.run_gpu_hours(run),
            }
        ).data

    def get_url(self, run: Run) -> str:
        return reverse("training:run", args=[run.pk])


class RunProfileSerializer(serializers.ModelSerializer):
    """One profiled rank: its summary, and where its file downloads."""

    file = serializers.SerializerMethodField(help_text="API address of the trace (torch) or pstats (cprofile) file.")

    class Meta:
        model = RunProfile
        fields = ["rank", "kind", "summary", "size", "note", "created", "file"]

    def get_file(self, profile: RunProfile) -> str | None:
        if not profile.size:
            return None
        return reverse("training:api-run-profile-file", args=[profile.run_id, profile.rank])


def state_payload(run: Run, metrics: list[RunMetric] = (), logs: list[RunLog] = ()) -> dict:
    """The websocket message for a change of ``run``: its state and the new points and lines."""
    return {
        "type": "update",
        "run": RunStateSerializer(run).data,
        "metrics": RunMetricSerializer(metrics, many=True).data,
        "logs": RunLogSerializer(logs, many=True).data,
    }


class SweepRunSerializer(serializers.ModelSerializer):
    status_label = serializers.CharField(source="get_status_display")
    metric = serializers.SerializerMethodField()
    gpu = serializers.SerializerMethodField(help_text="node:index of its GPU; null while it waits for one.")

    class Meta:
        model = Run
        fields = [
            "id",
            "name",
            "status",
            "status_label",
            "hyperparameters",
            "accuracy",
            "result",
            "metric",
            "gpu",
        ]

    def get_gpu(self, run: Run) -> str | None:
        gpus = list(run.gpus.all())
        return str(gpus[0]) if gpus else None

    def get_metric(self, run: Run) -> float | None:
        return sweep_metric(run, self.context["sweep"].metric)


def sweep_metric(run: Run, metric: str) -> float | None:
    """The run's final held-out metric; None until it has one."""
    if run.status != RunStatus.SUCCEEDED:
        return None
    value = run.result.get(metric)
    return value if isinstance(value, int | float) else None


class SweepSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.get_username")
    project = serializers.CharField(source="project.name", allow_null=True, default=None)
    gpu_model = serializers.CharField(source="gpu_model.name", allow_null=True, default=None)
    pool = serializers.SlugRelatedField(slug_field="uuid", many=True, read_only=True)
    runs = serializers.SerializerMethodField()

    class Meta:
        model = Sweep
        fields = [
            "id",
            "name",
            "owner",
            "project",
            "workload",
            "mode",
            "space",
            "metric",
            "gpu_model",
            "gpu_count",
            "pool",
            "created",
            "cancelled_at",
            "runs",
        ]

    def get_runs(self, sweep: Sweep) -> list[dict]:
        runs = sorted(sweep.runs.all(), key=lambda run: sweep_sort_key(run, sweep.metric))
        return SweepRunSerializer(runs, many=True, context={"sweep": sweep}).data


def sweep_sort_key(run: Run, metric: str) -> tuple:
    """Best first: higher accuracy or lower loss; runs without a result last, in launch order."""
    value = sweep_metric(run, metric)
    if value is None:
        return (1, 0.0, run.pk)
    return (0, -value if metric == "accuracy" else value, run.pk)
