"""Monitoring models: raw telemetry samples, per-process samples, their rollups and the ingest's bookkeeping.

Columns follow the agent's declared metric keys (monitoring/agent/metrics.py), units in the names.
NULL means the GPU could not report the value (N/A), never zero.

The raw tables are partitioned by day in PostgreSQL (monitoring/storage/partitions.py, and
docs/benchmarks.md#storage for why); their primary key is (gpu, ts), which makes a replayed sample a no-op.
"""

from django.db import models

from fleet.choices import NodeStatus
from fleet.models import GPU, Node


class MetricColumns(models.Model):
    """One nullable column per metric key of the agent protocol."""

    util_gpu = models.FloatField(null=True)
    util_mem = models.FloatField(null=True)
    mem_used_mib = models.FloatField(null=True)
    temp_c = models.FloatField(null=True)
    power_w = models.FloatField(null=True)
    sm_clock_mhz = models.FloatField(null=True)
    mem_clock_mhz = models.FloatField(null=True)
    fan_pct = models.FloatField(null=True)
    pcie_tx_kib_s = models.FloatField(null=True)
    pcie_rx_kib_s = models.FloatField(null=True)
    ecc_volatile = models.BigIntegerField(null=True)
    clocks_event_reasons = models.BigIntegerField(null=True)

    class Meta:
        abstract = True


class GPUSample(MetricColumns):
    """One raw sample of one GPU (kept a short time, then rolled up)."""

    pk = models.CompositePrimaryKey("gpu", "ts")
    # No database-level foreign key on the raw tables: its per-row check at commit made a flush 1.6x as
    # slow (docs/benchmarks.md#ingest). The ingest writes only GPUs a hello registered; deleting a GPU through
    # Django still deletes its samples.
    gpu = models.ForeignKey(GPU, on_delete=models.CASCADE, related_name="samples", db_constraint=False)
    ts = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.gpu_id}@{self.ts.isoformat()}"


class ProcessSample(models.Model):
    """One process seen on one GPU in one sample."""

    pk = models.CompositePrimaryKey("gpu", "ts", "pid")
    gpu = models.ForeignKey(GPU, on_delete=models.CASCADE, related_name="process_samples", db_constraint=False)
    ts = models.DateTimeField()
    pid = models.PositiveIntegerField()
    os_user = models.CharField(max_length=64, blank=True)
    name = models.CharField(max_length=255, blank=True)
    cmdline = models.TextField(blank=True)
    mem_used_mib = models.FloatField(null=True)
    sm_util = models.FloatField(null=True)
    started_at = models.DateTimeField(null=True)

    class Meta:
        indexes = [models.Index(fields=["os_user", "ts"], name="processsample_user_ts")]

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.os_user}) on {self.gpu_id}@{self.ts.isoformat()}"


class RollupColumns(models.Model):
    """min / avg / max of each metric over a bucket, and how many samples it holds."""

    samples = models.PositiveIntegerField()
    util_gpu_min = models.FloatField(null=True)
    util_gpu_avg = models.FloatField(null=True)
    util_gpu_max = models.FloatField(null=True)
    util_mem_min = models.FloatField(null=True)
    util_mem_avg = models.FloatField(null=True)
    util_mem_max = models.FloatField(null=True)
    mem_used_mib_min = models.FloatField(null=True)
    mem_used_mib_avg = models.FloatField(null=True)
    mem_used_mib_max = models.FloatField(null=True)
    temp_c_min = models.FloatField(null=True)
    temp_c_avg = models.FloatField(null=True)
    temp_c_max = models.FloatField(null=True)
    power_w_min = models.FloatField(null=True)
    power_w_avg = models.FloatField(null=True)
    power_w_max = models.FloatField(null=True)
    sm_clock_mhz_min = models.FloatField(null=True)
    sm_clock_mhz_avg = models.FloatField(null=True)
    sm_clock_mhz_max = models.FloatField(null=True)
    mem_clock_mhz_min = models.FloatField(null=True)
    mem_clock_mhz_avg = models.FloatField(null=True)
    mem_clock_mhz_max = models.FloatField(null=True)
    fan_pct_min = models.FloatField(null=True)
    fan_pct_avg = models.FloatField(null=True)
    fan_pct_max = models.FloatField(null=True)
    pcie_tx_kib_s_min = models.FloatField(null=True)
    pcie_tx_kib_s_avg = models.FloatField(null=True)
    pcie_tx_kib_s_max = models.FloatField(null=True)
    pcie_rx_kib_s_min = models.FloatField(null=True)
    pcie_rx_kib_s_avg = models.FloatField(null=True)
    pcie_rx_kib_s_max = models.FloatField(null=True)
    ecc_volatile_max = models.BigIntegerField(null=True)
    clocks_event_reasons_any = models.BigIntegerField(null=True, help_text="Bitwise OR over the bucket.")

    class Meta:
        abstract = True


class GPUMinute(RollupColumns):
    """One-minute rollup of a GPU's samples (kept 90 days by default)."""

    gpu = models.ForeignKey(GPU, on_delete=models.CASCADE, related_name="minutes")
    bucket = models.DateTimeField(help_text="Start of the minute, UTC.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["gpu", "bucket"], name="gpuminute_one_per_gpu_and_bucket")]
        indexes = [models.Index(fields=["bucket"], name="gpuminute_bucket")]

    def __str__(self) -> str:
        return f"{self.gpu_id}@{self.bucket.isoformat()}"


class GPUHour(RollupColumns):
    """One-hour rollup of a GPU's samples (kept forever by default)."""

    gpu = models.ForeignKey(GPU, on_delete=models.CASCADE, related_name="hours")
    bucket = models.DateTimeField(help_text="Start of the hour, UTC.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["gpu", "bucket"], name="gpuhour_one_per_gpu_and_bucket")]
        indexes = [models.Index(fields=["bucket"], name="gpuhour_bucket")]

    def __str__(self) -> str:
        return f"{self.gpu_id}@{self.bucket.isoformat()}"


class AgentSession(models.Model):
    """A node's current agent start and the highest frame seq stored from it, so a reconnect resumes there."""

    node = models.OneToOneField(Node, on_delete=models.CASCADE, related_name="agent_session")
    session = models.CharField(max_length=64, blank=True, help_text="The agent start's id from its hello.")
    boot_id = models.CharField(max_length=64, blank=True)
    last_seq = models.PositiveBigIntegerField(default=0)
    connection = models.CharField(max_length=32, blank=True, help_text="The newest connection; older ones close.")
    connected_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.node_id}: {self.session or self.boot_id} up to seq {self.last_seq}"


class NodeStatusChange(models.Model):
    """A node going online or offline, with why; the ingest writes one in the transaction that flips it."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="status_changes")
    old_status = models.CharField(max_length=16, choices=NodeStatus.choices)
    new_status = models.CharField(max_length=16, choices=NodeStatus.choices)
    reason = models.CharField(max_length=200)
    created = models.DateTimeField()

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["node", "-created"], name="nodestatuschange_node_created")]

    def __str__(self) -> str:
        return f"{self.node_id}: {self.old_status} → {self.new_status}"


class RollupProgress(models.Model):
    """How far one rollup table is computed, and the earliest late sample still to fold into it."""

    table = models.CharField(max_length=16, unique=True)
    done_until = models.DateTimeField(null=True, help_text="Every bucket that starts before this is rolled up.")
    late_since = models.DateTimeField(null=True, help_text="A sample this old arrived after its bucket was done.")
    last_run_at = models.DateTimeField(null=True)
    last_error = models.TextField(blank=True)

    class Meta:
        verbose_name_plural = "rollup progress"

    def __str__(self) -> str:
        return f"{self.table} rollup done until {self.done_until}"


# Alerts, notifications and usage live in their own modules; importing them here registers them.
from monitoring.alerts.models import Alert, AlertEvent, IdlePolicy, Reclaim, ReclaimExemption  # noqa: E402, F401
from monitoring.costs.models import UsageHour, UsageMinute  # noqa: E402, F401
from monitoring.notify.models import Notification, NotificationPreference, Webhook  # noqa: E402, F401
