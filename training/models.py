"""Training models: runs with their lifecycle, each node's share of a run, progress, logs and sweeps."""

import uuid

from django.conf import settings
from django.db import models
from django.dispatch import Signal
from django.utils import timezone

from inventory.models import GPU, GPUModel, Node, Project
from reservations.models import Reservation
from training import environments, strategies
from training.choices import ArtifactKind, RunNodeStatus, RunStatus, SweepMetric, SweepMode
from training.variables import shown

SCRIPT = "script"  # the workload name of a run that starts a user script
COMMAND = "command"  # the workload name of a run that starts the researcher's own command

# Which state a run may move to from which; anything else is refused.
TRANSITIONS = {
    RunStatus.QUEUED: (RunStatus.SCHEDULED,),
    RunStatus.STARTING: (RunStatus.QUEUED,),
    RunStatus.RUNNING: (RunStatus.STARTING,),
    RunStatus.SUCCEEDED: (RunStatus.STARTING, RunStatus.RUNNING),
    RunStatus.FAILED: RunStatus.unfinished(),
    RunStatus.CANCELLED: RunStatus.unfinished(),
    RunStatus.LOST: RunStatus.active(),
}


# Sent with the run (``run=``) each time one reaches an end state, inside the transaction that ends it,
# whatever ended it: its processes, a cancel, a lost node worker, a queue that refused it.
run_finished = Signal()


class IllegalTransition(Exception):
    """A run was asked to move to a state it cannot reach from where it is."""


class Sweep(models.Model):
    """A grid or random search over hyperparameters: N runs of one workload, compared on one metric."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sweeps")
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="sweeps", null=True, blank=True)
    name = models.CharField(max_length=100)
    workload = models.CharField(max_length=300)
    mode = models.CharField(max_length=16, choices=SweepMode.choices)
    space = models.JSONField(help_text="Values (grid, random choice) or ranges (random) per hyperparameter.")
    metric = models.CharField(max_length=16, choices=SweepMetric.choices, default=SweepMetric.ACCURACY)
    created = models.DateTimeField(default=timezone.now)
    gpu_model = models.ForeignKey(
        GPUModel,
        on_delete=models.PROTECT,
        related_name="sweeps",
        null=True,
        blank=True,
        help_text="Any free GPU of it.",
    )
    gpu_count = models.PositiveSmallIntegerField(null=True, blank=True, help_text="How many GPUs it uses at once.")
    pool = models.ManyToManyField(GPU, related_name="sweeps", blank=True, help_text="The specific GPUs it may use.")
    cancelled_at = models.DateTimeField(null=True, blank=True)
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, related_name="+", null=True, blank=True
    )

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return self.name


class Run(models.Model):
    """One training run: what to train, where, how, and what happened."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs")
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="runs", null=True, blank=True)
    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="runs", null=True, blank=True)
    name = models.CharField(max_length=100)
    workload = models.CharField(max_length=100, help_text=f"A built-in workload, or {SCRIPT!r}.")
    script = models.CharField(max_length=1000, blank=True, help_text="Resolved path of a user script.")
    strategy = models.CharField(max_length=16, choices=strategies.choices)
    gpus = models.ManyToManyField(GPU, related_name="runs", blank=True)
    processes = models.PositiveSmallIntegerField(default=1, help_text="Processes per node.")
    hyperparameters = models.JSONField(default=dict)
    profiler = models.JSONField(
        default=dict, blank=True, help_text="Profiler options (training/profiling/options.py); empty: off."
    )
    # The researcher's own command (workload COMMAND), or the command a built-in workload fills in.
    command = models.JSONField(default=list, blank=True, help_text="The argument list, run without a shell.")
    shell_line = models.TextField(blank=True, help_text="A shell line the researcher chose: run as bash -lc LINE.")
    workdir = models.CharField(max_length=1000, blank=True, help_text="Where it runs; empty: the run's directory.")
    variables = models.JSONField(
        default=dict,
        blank=True,
        help_text="Environment variables set at launch; secret-looking values are never shown, and wiped at the end.",
    )
    setup = models.TextField(blank=True, help_text="Commands run first, in the same environment and directory.")
    env_kind = models.CharField(max_length=16, choices=environments.choices, default="fleet")
    env_ref = models.CharField(
        max_length=1000, blank=True, help_text="A venv's or conda env's path on the node, or a container image."
    )
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    error = models.TextField(blank=True)
    exit_code = models.IntegerField(null=True, blank=True)

    created = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    first_step_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, related_name="+", null=True, blank=True
    )

    # Latest progress; NULL until the training process reports it.
    step = models.PositiveBigIntegerField(null=True, blank=True)
    epoch = models.PositiveIntegerField(null=True, blank=True)
    loss = models.FloatField(null=True, blank=True, help_text="Training loss over the latest steps.")
    accuracy = models.FloatField(null=True, blank=True, help_text="Held-out accuracy after the latest epoch.")
    samples_per_s = models.FloatField(null=True, blank=True)
    gflops = models.FloatField(null=True, blank=True, help_text="Burn-in: GFLOP/s over the latest multiplies.")
    result = models.JSONField(default=dict, blank=True, help_text="The training process's final report.")
    environment = models.JSONField(default=dict, blank=True, help_text="Python, torch, CUDA, host, git commit.")
    rendezvous = models.CharField(max_length=300, blank=True, help_text="host:port of a multi-node DDP run.")
    override = models.TextField(blank=True, help_text="What an admin launched it over (others' processes).")
    reservation = models.ForeignKey(
        Reservation,
        on_delete=models.SET_NULL,
        related_name="runs",
        null=True,
        blank=True,
        help_text="The booking a scheduled run starts on.",
    )
    start_at = models.DateTimeField(null=True, blank=True, help_text="When a scheduled run starts.")

    # Its directories (output, artifacts, default checkpoints) are named after the UUID: a database made afresh
    # numbers runs from 1 again, and a run must never find the files of an earlier database's run of its number.
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    files_dir_name = models.CharField(
        max_length=100,
        blank=True,
        editable=False,
        help_text="run-<id> for a run from before its files were named after its UUID; blank: run-<uuid>.",
    )

    # Checkpoints and resume (training/run_files/checkpoint_dirs.py, training/launching/resume_run.py).
    stop_reason = models.CharField(max_length=300, blank=True, help_text="Why it was asked to stop, when it was.")
    checkpoint_dir = models.CharField(max_length=1000, blank=True, help_text="Where its checkpoints are saved.")
    checkpoint = models.JSONField(
        default=dict, blank=True, help_text="The latest checkpoint: step, bytes, seconds, reason, saved_at."
    )
    resumed_from = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        related_name="resumes",
        null=True,
        blank=True,
        help_text="The run whose last checkpoint this one continues from.",
    )

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["status"], name="run_status_idx")]
        constraints = [
            models.CheckConstraint(condition=models.Q(processes__gte=1), name="run_processes_at_least_one"),
            models.CheckConstraint(
                condition=models.Q(status__in=RunStatus.finished(), finished_at__isnull=False)
                | (~models.Q(status__in=RunStatus.finished()) & models.Q(finished_at__isnull=True)),
                name="run_finished_at_iff_finished",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.name}"

    @property
    def files_name(self) -> str:
        """The name of its directories under RUN_OUTPUT_DIR, RUN_ARTIFACT_DIR and (unless named) RUN_CHECKPOINT_DIR."""
        return self.files_dir_name or f"run-{self.uuid}"

    @property
    def status_colour(self) -> str:
        return RunStatus(self.status).colour

    @property
    def is_finished(self) -> bool:
        return self.status in RunStatus.finished()

    def queue(self) -> None:
        """A scheduled run's booking has begun: it waits for its node workers now."""
        self._move(RunStatus.QUEUED)

    def start(self) -> None:
        """A node worker has taken the run and is starting its processes."""
        self._move(RunStatus.STARTING, started_at=timezone.now())

    def mark_running(self) -> None:
        """The training process has reported; a no-op when the run is already past starting."""
        if self.status == RunStatus.STARTING:
            self._move(RunStatus.RUNNING)

    def finish(self, status: str, error: str = "", exit_code: int | None = None) -> None:
        """Record the end of the run; refuses to end it twice or to succeed a run that never started.

        However it ends, the values of its secret-looking variables are wiped: they were needed only to start it.
        """
        if status not in RunStatus.finished():
            raise IllegalTransition(f"{status} is not an end state")
        wiped = shown(self.variables)
        self._move(status, finished_at=timezone.now(), error=error[:5000], exit_code=exit_code, variables=wiped)
        run_finished.send(sender=Run, run=self)

    def _move(self, status: str, **fields) -> None:
        allowed = TRANSITIONS[status]
        # A compare-and-set, so the web app (cancel), node workers and the lost-run check never
        # overwrite each other's decision.
        updated = Run.objects.filter(pk=self.pk, status__in=allowed).update(status=status, **fields)
        if updated != 1:
            current = Run.objects.filter(pk=self.pk).values_list("status", flat=True).first()
            raise IllegalTransition(f"run {self.pk} cannot go from {current} to {status}")
        self.status = status
        for name, value in fields.items():
            setattr(self, name, value)


class RunNode(models.Model):
    """One node's share of a run: its GPUs, its process group and its heartbeats."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="nodes")
    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="run_nodes")
    rank = models.PositiveSmallIntegerField(help_text="Node rank; node 0 serves a multi-node rendezvous.")
    gpu_indexes = models.JSONField(default=list, help_text="NVML indexes on this node, for CUDA_VISIBLE_DEVICES.")
    status = models.CharField(max_length=16, choices=RunNodeStatus.choices, default=RunNodeStatus.QUEUED)
    pid = models.PositiveIntegerField(null=True, blank=True, help_text="The launcher's process id on the node.")
    worker = models.CharField(max_length=300, blank=True, help_text="The node worker that took this share.")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    environment = models.JSONField(default=dict, blank=True, help_text="Host, versions and devices on this node.")
    sent_at = models.DateTimeField(null=True, blank=True, help_text="When its task was last sent to the node.")
    sends = models.PositiveSmallIntegerField(default=0, help_text="How many times its task was sent.")
    seen_at = models.DateTimeField(null=True, blank=True, help_text="When a node worker last looked at it.")

    class Meta:
        ordering = ["run", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["run", "rank"], name="run_node_unique_rank"),
            models.UniqueConstraint(fields=["run", "node"], name="run_node_unique_node"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} on {self.node_id} (rank {self.rank})"


class WorkerPresence(models.Model):
    """When a node worker consuming a node's queue was last alive, so a waiting run can say what it waits for."""

    node = models.OneToOneField(Node, on_delete=models.CASCADE, related_name="worker_presence")
    worker = models.CharField(max_length=300, blank=True)
    seen_at = models.DateTimeField()
    idle_slots = models.PositiveSmallIntegerField(default=0, help_text="Runs it could have started when seen.")
    environments = models.JSONField(
        default=dict,
        blank=True,
        help_text='What runs may use there, as it last reported: {"venv": ["/srv/envs/torch"], "image": [...]}.',
    )

    def __str__(self) -> str:
        return f"{self.worker or self.node_id} seen {self.seen_at:%Y-%m-%d %H:%M:%S} UTC"


class RunMetric(models.Model):
    """One progress report of a run: the points of its loss, accuracy and throughput curves."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="metrics")
    ts = models.DateTimeField()
    step = models.PositiveBigIntegerField()
    epoch = models.PositiveIntegerField(null=True, blank=True)
    loss = models.FloatField(null=True, blank=True)
    accuracy = models.FloatField(null=True, blank=True)
    samples_per_s = models.FloatField(null=True, blank=True)
    gflops = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["run", "id"]
        indexes = [models.Index(fields=["run", "id"], name="run_metric_run_id_idx")]

    def __str__(self) -> str:
        return f"run {self.run_id} step {self.step}"


class RunLog(models.Model):
    """One line a run's processes printed (events excluded), in arrival order."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="logs")
    node_rank = models.PositiveSmallIntegerField(default=0)
    ts = models.DateTimeField(default=timezone.now)
    line = models.TextField()

    class Meta:
        ordering = ["run", "id"]
        indexes = [models.Index(fields=["run", "id"], name="run_log_run_id_idx")]

    def __str__(self) -> str:
        return self.line[:80]


class RunProfile(models.Model):
    """What the profiler recorded on one rank of a run: its summary, and its trace or pstats file."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="profiles")
    rank = models.PositiveIntegerField(help_text="The global rank of the process that was profiled.")
    kind = models.CharField(max_length=16, help_text="torch (Chrome trace) or cprofile (pstats).")
    summary = models.JSONField(default=dict, help_text="Top operators or functions, and the step-time split.")
    data = models.BinaryField(blank=True, help_text="The trace or pstats file, gzip-compressed; empty when too large.")
    size = models.PositiveBigIntegerField(default=0, help_text="The file's size before compression, in bytes.")
    note = models.CharField(max_length=300, blank=True, help_text="Why the file is missing, when it is.")
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "rank"]
        constraints = [models.UniqueConstraint(fields=["run", "rank"], name="run_profile_unique_rank")]

    def __str__(self) -> str:
        return f"run {self.run_id} rank {self.rank} ({self.kind})"


class RunArtifact(models.Model):
    """A file a run left for download (its final model, its metrics per step), kept under RUN_ARTIFACT_DIR."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="artifacts")
    name = models.CharField(max_length=100, help_text="The file's name, e.g. model.pt.")
    kind = models.CharField(max_length=16, choices=ArtifactKind.choices)
    path = models.CharField(max_length=500, help_text="Where it is, relative to RUN_ARTIFACT_DIR.")
    size_bytes = models.PositiveBigIntegerField()
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "name"]
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="run_artifact_unique_name")]

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.name}"
