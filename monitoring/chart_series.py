"""Time series of one GPU for charts: raw samples for short ranges, rollups for long ones.

Each range reads the coarsest table that still draws a useful line: 15 min of raw samples (about 900
points at 1 Hz), 6 h and 24 h of minute rollups, 7 d and 30 d of hour rollups. Rollups are made a little
after their bucket ends, so the buckets since the newest rollup are averaged from the raw samples on the
fly: a long-range chart is never stale by a rollup interval. A gap in the data is a null point (the line
breaks), never a straight line drawn across an outage.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db.models import Avg
from django.db.models.functions import Trunc
from django.utils import timezone

from fleet.models import GPU
from monitoring.models import GPUHour, GPUMinute, GPUSample

CHART_METRICS = (
    "util_gpu",
    "util_mem",
    "mem_used_mib",
    "temp_c",
    "power_w",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "fan_pct",
    "pcie_tx_kib_s",
    "pcie_rx_kib_s",
)
# A point further than this many steps from the previous one starts a new line segment.
GAP_STEPS = 3


@dataclass(frozen=True)
class ChartRange:
    """A range a chart can show and the table it reads."""

    key: str
    span: timedelta
    table: str  # "raw", "minute" or "hour"
    live: bool  # the page extends it with live updates

    @property
    def bucket_s(self) -> float:
        return {"raw": settings.AGENT_INTERVAL_S, "minute": 60, "hour": 3600}[self.table]


RANGES = {
    r.key: r
    for r in (
        ChartRange("15m", timedelta(minutes=15), "raw", live=True),
        ChartRange("6h", timedelta(hours=6), "minute", live=True),
        ChartRange("24h", timedelta(hours=24), "minute", live=False),
        ChartRange("7d", timedelta(days=7), "hour", live=False),
        ChartRange("30d", timedelta(days=30), "hour", live=False),
    )
}
ROLLUPS = {"minute": GPUMinute, "hour": GPUHour}


def raw_rows(gpu: GPU, metrics: list[str], start: datetime) -> list[tuple]:
    samples = GPUSample.objects.filter(gpu=gpu, ts__gte=start).order_by("ts")
    return list(samples.values_list("ts", *metrics))


def rollup_rows(gpu: GPU, metrics: list[str], table: str, start: datetime) -> list[tuple]:
    buckets = ROLLUPS[table].objects.filter(gpu=gpu, bucket__gte=start).order_by("bucket")
    return list(buckets.values_list("bucket", *[f"{metric}_avg" for metric in metrics]))


def raw_averaged(gpu: GPU, metrics: list[str], table: str, start: datetime) -> list[tuple]:
    """Raw samples since start averaged per minute or hour, for the buckets no rollup holds yet."""
    bucket = Trunc("ts", table, tzinfo=UTC)
    samples = GPUSample.objects.filter(gpu=gpu, ts__gte=start).annotate(bucket=bucket).values("bucket")
    averaged = samples.annotate(**{f"avg_{m}": Avg(m) for m in metrics}).order_by("bucket")
    return [(row["bucket"], *(row[f"avg_{m}"] for m in metrics)) for row in averaged]


def rows_for(gpu: GPU, metrics: list[str], chart_range: ChartRange, start: datetime) -> list[tuple]:
    if chart_range.table == "raw":
        return raw_rows(gpu, metrics, start)
    rows = rollup_rows(gpu, metrics, chart_range.table, start)
    tail_start = rows[-1][0] + timedelta(seconds=chart_range.bucket_s) if rows else start
    return rows + raw_averaged(gpu, metrics, chart_range.table, tail_start)


def with_gaps(rows: list[tuple], step_s: float) -> list[tuple]:
    """Insert an all-null row where consecutive points lie more than GAP_STEPS steps apart."""
    out: list[tuple] = []
    for row in rows:
        if out and (row[0] - out[-1][0]).total_seconds() > GAP_STEPS * step_s:
            gap_at = out[-1][0] + timedelta(seconds=step_s)
            out.append((gap_at, *([None] * (len(row) - 1))))
        out.append(row)
    return out


def gpu_series(gpu: GPU, metrics: list[str], range_key: str, now: datetime | None = None) -> dict:
    """One GPU's metrics over a range: times in UNIX seconds and one list of values (null = N/A) per metric."""
    chart_range = RANGES[range_key]
    now = now or timezone.now()
    rows = with_gaps(rows_for(gpu, metrics, chart_range, now - chart_range.span), chart_range.bucket_s)
    return {
        "gpu": gpu.uuid,
        "range": chart_range.key,
        "table": chart_range.table,
        "step_s": chart_range.bucket_s,
        "live": chart_range.live,
        "start": (now - chart_range.span).timestamp(),
        "end": now.timestamp(),
        "t": [row[0].timestamp() for row in rows],
        "series": {metric: [row[i + 1] for row in rows] for i, metric in enumerate(metrics)},
    }
