"""Synthetic telemetry for alert and cost tests: what the ingest stores, written through the ORM.

`stream()` writes raw GPU and process samples and the GPU's latest state, `roll_up()` runs the telemetry
beat task's minute rollup, so rules see the same rows they see in production.
"""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from inventory.models import GPU, GPUModel, Node
from monitoring.storage import partitions, rollups
from monitoring.storage.models import GPUSample, ProcessSample, RollupProgress
from tests.support.gpus import set_states

Util = float | Callable[[datetime], float]


def process(
    pid: int,
    user: str,
    mem_used_mib: float = 8000,
    sm_util: float | None = None,
    started_at: datetime | None = None,
    name: str = "python",
    cmdline: str = "python train.py",
) -> dict:
    """A process dict as the agent protocol reports it (started_at in UNIX seconds)."""
    return {
        "pid": pid,
        "user": user,
        "name": name,
        "cmdline": cmdline,
        "mem_used_mib": mem_used_mib,
        "sm_util": sm_util,
        "started_at": None if started_at is None else started_at.timestamp(),
    }


def add_gpu(hostname: str = "gpu-01", index: int = 0, model: str = "A100 80GB") -> GPU:
    node, _ = Node.objects.get_or_create(hostname=hostname)
    return GPU.objects.create(
        node=node, index=index, uuid=f"GPU-{hostname}-{index}", model=GPUModel.objects.get(name=model)
    )


def value_at(util: Util, ts: datetime) -> float:
    return util(ts) if callable(util) else util


def stream(
    gpu: GPU,
    start: datetime,
    end: datetime,
    util: Util,
    processes: list[dict],
    interval_s: float = 10.0,
    temp_c: float = 45.0,
    clocks_event_reasons: int = 0,
    ecc_volatile: int | None = 0,
) -> None:
    """Samples every interval over [start, end); process sm_util follows the GPU's unless given."""
    ensure_partitions(start, end)
    gpu_rows, process_rows = [], []
    ts = start
    while ts < end:
        value = value_at(util, ts)
        gpu_rows.append(
            GPUSample(
                gpu=gpu,
                ts=ts,
                util_gpu=value,
                mem_used_mib=sum(p["mem_used_mib"] or 0 for p in processes),
                temp_c=temp_c,
                clocks_event_reasons=clocks_event_reasons,
                ecc_volatile=ecc_volatile,
            )
        )
        for p in processes:
            started = p["started_at"]
            process_rows.append(
                ProcessSample(
                    gpu=gpu,
                    ts=ts,
                    pid=p["pid"],
                    os_user=p["user"],
                    name=p["name"],
                    cmdline=p["cmdline"],
                    mem_used_mib=p["mem_used_mib"],
                    sm_util=p["sm_util"] if p["sm_util"] is None or not callable(p["sm_util"]) else p["sm_util"](ts),
                    started_at=None if started is None else datetime.fromtimestamp(started, tz=UTC),
                )
            )
        last = ts
        ts += timedelta(seconds=interval_s)
    GPUSample.objects.bulk_create(gpu_rows, batch_size=2000)
    ProcessSample.objects.bulk_create(process_rows, batch_size=2000)
    latest_state(gpu, last, value_at(util, last), processes, temp_c, clocks_event_reasons, ecc_volatile)


def latest_state(gpu, ts, util, processes, temp_c=45.0, clocks_event_reasons=0, ecc_volatile=0) -> None:
    listed = [{**p, "sm_util": p["sm_util"](ts) if callable(p["sm_util"]) else p["sm_util"]} for p in processes]
    set_states(
        GPU.objects.filter(pk=gpu.pk),
        last_sample_at=ts,
        util_gpu=util,
        mem_used_mib=sum(p["mem_used_mib"] or 0 for p in processes),
        temp_c=temp_c,
        clocks_event_reasons=clocks_event_reasons,
        ecc_volatile=ecc_volatile,
        processes=listed,
    )
    gpu.refresh_from_db()


def roll_up(now: datetime) -> None:
    """The telemetry beat task's minute rollup, run at `now` as often as it takes to catch up.

    A first run starts at the raw retention horizon and does a few hours per run, as in production.
    """
    for _ in range(20):
        rollups.rollup_minutes(now)
        done = RollupProgress.objects.get(table="minute").done_until
        if done is not None and done >= now.replace(second=0, microsecond=0) - timedelta(minutes=1):
            return


def ensure_partitions(start: datetime, end: datetime) -> None:
    """The raw tables are partitioned by day; the ingest makes partitions as samples arrive, so do we."""
    days, day = [], start.date()
    while day <= end.date():
        days.append(day)
        day += timedelta(days=1)
    partitions.create_missing(days)
