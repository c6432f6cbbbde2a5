"""A GPU health history from the simulated agent: its readings stored as the ingest stores them."""

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from inventory.models import GPU, GPUModel, Node
from monitoring.agent.metrics import METRIC_KEYS
from monitoring.agent.simulate import Simulator
from monitoring.agent.simulate_health import XID_FIRST_S, XID_PERIOD_S
from monitoring.health.models import BurnIn
from monitoring.storage.models import GPUSample
from monitoring.storage.partitions import create_missing
from tests.support.gpus import set_states

SEED = 4  # the simulation's XID GPU is index seed % 8 = 4, its GPU with remapped rows index 1
XID_GPU, REMAP_GPU = 4, 1
SPAN_S = XID_FIRST_S + 2 * XID_PERIOD_S + 60  # three XID errors
EVERY_S = 60


def simulated_node(hostname: str = "gpu-health-01") -> tuple[Node, Simulator]:
    simulator = Simulator(8, hostname, seed=SEED, started_at=0.0, model="NVIDIA A100-SXM4-80GB")
    node = Node.objects.create(hostname=hostname, status="online", last_seen=timezone.now())
    model = GPUModel.objects.get(name="A100 80GB")
    for gpu in simulator.gpus():
        GPU.objects.create(node=node, index=gpu["index"], uuid=gpu["uuid"], model=model, name=gpu["name"])
    return node, simulator


def store_history(simulator: Simulator, clean_until_s: float = 0.0) -> datetime:
    """SPAN_S seconds of readings ending now; before clean_until_s the remapped GPU still had clean memory."""
    now = timezone.now()
    start = now - timedelta(seconds=SPAN_S)
    clean = Simulator(8, simulator.hostname, seed=SEED + 1, started_at=0.0, model="NVIDIA A100-SXM4-80GB")
    ids = dict(GPU.objects.filter(uuid__in=simulator.uuids).values_list("uuid", "pk"))
    rows, latest = [], {}
    for elapsed in range(0, SPAN_S + 1, EVERY_S):
        ts = start + timedelta(seconds=elapsed)
        readings = simulator.sample(float(elapsed))
        if elapsed < clean_until_s:
            readings[REMAP_GPU] = {**readings[REMAP_GPU], **_memory(clean.sample(float(elapsed))[REMAP_GPU])}
        for index, reading in enumerate(readings):
            values = {key: reading[key] for key in METRIC_KEYS}
            rows.append(GPUSample(gpu_id=ids[simulator.uuids[index]], ts=ts, **values))
            latest[index] = (ts, values)
    create_missing({row.ts.astimezone(UTC).date() for row in rows})
    GPUSample.objects.bulk_create(rows)
    for index, (ts, values) in latest.items():
        set_states(GPU.objects.filter(pk=ids[simulator.uuids[index]]), last_sample_at=ts, **values)
    return start


def _memory(reading: dict) -> dict:
    keys = ("remapped_correctable", "remapped_uncorrectable", "remap_pending", "remap_failure")
    return {key: reading[key] for key in keys}


def failed_burnin(gpu: GPU, at: datetime) -> BurnIn:
    return BurnIn.objects.create(
        gpu=gpu,
        finished_at=at,
        started_at=at - timedelta(seconds=60),
        device="cuda:1",
        gflops=9000.0,
        datasheet_gflops=19500.0,
        fraction_of_peak=9000 / 19500,
        mismatches=0,
        passed=False,
        reason="speed: 9000 GFLOP/s is 46% of the datasheet's 19500 (at least 60 % needed)",
        peak_temp_c=83.0,
        peak_sm_clock_mhz=1410.0,
        lowest_sm_clock_mhz=900.0,
        samples=60,
    )
