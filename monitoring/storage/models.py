"""Telemetry's tables: raw samples of each GPU and its processes, their rollups, and each GPU's latest state.

Columns follow the agent's declared metric keys (monitoring/agent/metrics.py), units in the names.
NULL means the GPU could not report the value (N/A), never zero.

The raw tables are partitioned by day in PostgreSQL (monitoring/storage/partitions.py, and
docs/benchmarks.md#storage for why); their primary key is (gpu, ts), which makes a replayed sample a no-op.
"""

from django.db import models

from inventory.models import GPU
from monitoring.storage.columns import rollup_fields, sample_fields


class MetricColumns(models.Model):
    """One nullable column per metric key of the agent protocol."""

    locals().update(sample_fields())

    class Meta:
        abstract = True


class GPUSample(MetricColumns):
    """One raw sample of one GPU (kept a short time, then rolled up)."""

    pk = models.CompositePrimaryKey("gpu", "ts")
    # No database-level foreign key on the raw tables: its per-row check at commit made every flush
    # slower (docs/benchmarks.md#write-method). The ingest writes only GPUs a hello registered; deleting a GPU through
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
    # The run the process belongs to, when the ingest believed its claim (monitoring/ingest/claims.py).
    # A plain id, no foreign key: deleting a run must not walk the raw samples.
    run_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["os_user", "ts"], name="processsample_user_ts")]

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.os_user}) on {self.gpu_id}@{self.ts.isoformat()}"


class GPUState(models.Model):
    """One GPU's latest reported state: every metric, its processes and when it was sampled.

    Telemetry's row beside the inventory's GPU, written by the ingest (monitoring/ingest/writer.py) and read
    through monitoring/storage/latest.py. Every flush rewrites it, so half of each page is kept free (see the
    migration) for PostgreSQL to update it in place. NULL means not reported (N/A), never zero.
    """

    gpu = models.OneToOneField(GPU, on_delete=models.CASCADE, primary_key=True, related_name="state")
    last_sample_at = models.DateTimeField(null=True, blank=True)
    locals().update(sample_fields(blank=True))  # one column per metric of the agent protocol
    processes = models.JSONField(default=list, blank=True, help_text="Processes seen in the latest sample.")

    class Meta:
        verbose_name = "GPU state"

    def __str__(self) -> str:
        return f"state of GPU {self.gpu_id} at {self.last_sample_at}"


class NvLinkState(models.Model):
    """A GPU's NVLink throughput per link as last reported, the rest of its latest state.

    A row of its own rather than columns of GPUState: a kilobyte of links in a row that every flush rewrites
    kept PostgreSQL from updating it in place and cost far more database time per sample
    (docs/benchmarks.md). Links arrive every NVLINK_EVERY_S, and only then is this row written.
    """

    gpu = models.OneToOneField(GPU, on_delete=models.CASCADE, primary_key=True, related_name="nvlink_state")
    ts = models.FloatField(help_text="UNIX time of the sample that brought the figures.")
    links = models.JSONField(
        default=list, blank=True, help_text="[{tx_kib_s, rx_kib_s}] by link number; empty without NVLink."
    )

    class Meta:
        verbose_name = "NVLink state"

    def __str__(self) -> str:
        return f"NVLink of GPU {self.gpu_id}: {len(self.links)} links"

    @staticmethod
    def figures(ts: float, links: list[dict] | None) -> dict | None:
        """The per-link figures as pages and /metrics take them (metrics.current_links), or None without NVLink."""
        return {"ts": ts, "links": links} if links else None

    def kept(self) -> dict | None:
        return self.figures(self.ts, self.links)


class RollupColumns(models.Model):
    """min / avg / max of each metric over a bucket, and how many samples it holds."""

    samples = models.PositiveIntegerField()
    locals().update(rollup_fields())

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
