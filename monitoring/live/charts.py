"""Time series of one GPU for charts: raw samples for short ranges, rollups for long ones.

Each range reads the coarsest table that still draws a useful line: 15 min of raw samples (about 900
points at 1 Hz), 6 h and 24 h of minute rollups, 7 d and 30 d of hour rollups. The reading is the
storage's own (monitoring/storage/series.py), which fills the buckets not rolled up yet from the finer table, so a
chart always reaches the present. Its gpu_series picks raw samples up to 6 h; a chart asks for minutes
there instead, as 21,600 points a line is more than a chart can show or a page should download. A gap in
the data is a null point (the line breaks), never a straight line drawn across an outage.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from inventory.models import GPU
from monitoring.agent.metrics import METRICS
from monitoring.storage.series import HOUR, MINUTE, RAW, collect, read_raw, read_rollup

# Every gauge of the agent protocol can be charted; counters and bitmasks are shown otherwise.
CHART_METRICS = tuple(metric.key for metric in METRICS if metric.gauge)
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
        return {RAW: settings.AGENT_INTERVAL_S, MINUTE: 60, HOUR: 3600}[self.table]


RANGES = {
    r.key: r
    for r in (
        ChartRange("15m", timedelta(minutes=15), RAW, live=True),
        ChartRange("6h", timedelta(hours=6), MINUTE, live=True),
        ChartRange("24h", timedelta(hours=24), MINUTE, live=False),
        ChartRange("7d", timedelta(days=7), HOUR, live=False),
        ChartRange("30d", timedelta(days=30), HOUR, live=False),
    )
}


def rows_for(gpu: GPU, metrics: list[str], chart_range: ChartRange, start: datetime, end: datetime) -> list[tuple]:
    """(time, *values) rows from the table the range reads, through the storage's own readers."""
    reader = read_raw if chart_range.table == RAW else read_rollup
    columns, rows = reader(chart_range.table, [gpu.pk], metrics, start, end)
    series = collect([gpu.pk], columns, rows)[gpu.pk]
    return list(zip(series["ts"], *(series[metric] for metric in metrics), strict=True))


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
    rows = with_gaps(rows_for(gpu, metrics, chart_range, now - chart_range.span, now), chart_range.bucket_s)
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
