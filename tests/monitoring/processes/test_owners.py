"""Who owns a GPU process, through the real ingest writer: a run's process is its owner's, if placed there.

A process names its run (the agent reads FLEET_RUN_ID); the ingest believes the claim only for a run placed
on that GPU. Bookings, costs, idle alerts and the live view then all give the process to the same person.
"""

import time
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.utils import timezone

from inventory.models import GPU, Node
from monitoring.alerts.gpu_rows import gpu_rows
from monitoring.alerts.rules.idle.rule import candidates_of
from monitoring.costs.models import UsageHour
from monitoring.costs.rollup import rollup_usage
from monitoring.ingest.validation import FrameError, check_samples
from monitoring.ingest.writer import Frame, GPURef, write_frames
from monitoring.live.state import fleet_payload
from monitoring.storage.models import GPUState, ProcessSample
from monitoring.storage.partitions import PARTITIONS
from reservations.models import Reservation, ReservationEvent
from reservations.watch import watch_reservations
from training.choices import RunStatus
from training.models import Run
from training.owners import ProcessOwners, owner_key

pytestmark = pytest.mark.django_db(transaction=True)
WORKER_ACCOUNT = "fleetsvc"  # the node worker's OS account: nobody's researcher


@pytest.fixture(autouse=True)
def forget_partitions():
    PARTITIONS.reset()
    yield
    PARTITIONS.reset()


@pytest.fixture
def fleet(gpu_models):
    users = {name: get_user_model().objects.create_user(name, password="x") for name in ("alice", "bob")}
    gpus = {}
    for hostname in ("gpu-01", "gpu-02"):
        node = Node.objects.create(hostname=hostname)
        for index in (0, 1):
            gpus[(hostname, index)] = GPU.objects.create(node=node, index=index, uuid=f"GPU-{hostname}-{index}")
    run = Run.objects.create(owner=users["alice"], name="mnist", workload="digits_cnn", strategy="single")
    run.gpus.set([gpus[("gpu-01", 0)]])
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, started_at=timezone.now() - timedelta(hours=1))
    return users, gpus, run


def ref(gpu: GPU) -> GPURef:
    return GPURef(gpu.pk, gpu.uuid, gpu.index, gpu.node.hostname, 81920)


def process(pid: int, user: str = WORKER_ACCOUNT, run=None, mem: float = 4000) -> dict:
    raw = {"pid": pid, "user": user, "name": "python", "cmdline": "python -m train", "mem_used_mib": mem}
    return raw if run is None else {**raw, "run": run}


def ingest(gpu: GPU, processes: list[dict], ts: float | None = None, util: float = 90) -> dict:
    """One agent frame for one GPU, checked and written as the ingest does; returns the GPU's stored state."""
    now = time.time()
    raw = {"seq": 1, "samples": [{"ts": ts or now, "gpu": gpu.uuid, "util_gpu": util, "processes": processes}]}
    checked = check_samples(raw, {gpu.uuid}, now)
    if checked.refused is not None:  # the ingest answers with this error frame and stores no refused sample
        raise checked.refused
    frame = Frame(gpu.node_id, "s", "b", 1, [(ref(gpu), sample) for sample in checked.samples])
    write_frames([frame], timezone.now())
    return GPUState.objects.get(gpu=gpu).processes


def test_a_process_of_a_run_placed_on_its_gpu_belongs_to_the_runs_owner(fleet):
    users, gpus, run = fleet
    gpu = gpus[("gpu-01", 0)]
    [stored] = ingest(gpu, [process(4242, run=run.pk)])
    assert stored["run"] == run.pk and "unverified_run" not in stored
    assert ProcessSample.objects.get().run_id == run.pk
    assert ProcessOwners([stored]).of(stored) == users["alice"]
    [tile] = fleet_payload(gpu_uuid=gpu.uuid)["nodes"][0]["gpus"]
    assert tile["processes"][0]["owner"] == "alice" and tile["processes"][0]["run"] == run.pk
    assert tile["users"] == ["alice"]


@pytest.mark.parametrize("where", [("gpu-01", 1), ("gpu-02", 0)], ids=["another GPU", "another node"])
def test_a_claim_of_a_run_placed_elsewhere_is_not_believed_and_is_flagged(fleet, where, caplog):
    users, gpus, run = fleet
    gpu = gpus[where]
    [stored] = ingest(gpu, [process(4242, user="bob", run=run.pk)])
    assert "run" not in stored and stored["unverified_run"] == run.pk
    assert ProcessSample.objects.get().run_id is None
    assert ProcessOwners([stored]).of(stored) == users["bob"]  # its OS user's researcher, not the run's owner
    [tile] = fleet_payload(gpu_uuid=gpu.uuid)["nodes"][0]["gpus"]
    assert tile["processes"][0]["owner"] == "bob" and tile["processes"][0]["unverified_run"] == run.pk
    assert "not placed on that GPU" in caplog.text


def test_a_claim_of_a_run_that_does_not_exist_is_not_believed(fleet):
    _, gpus, run = fleet
    [stored] = ingest(gpus[("gpu-01", 0)], [process(4242, run=run.pk + 1000)])
    assert "run" not in stored and stored["unverified_run"] == run.pk + 1000
    assert ProcessOwners([stored]).of(stored) is None  # the worker's account is nobody's


@pytest.mark.parametrize("bad", ["7", 0, -3, 1.5, True, 2**63, {"id": 1}, "\x00"])
def test_a_run_that_is_not_a_run_id_is_refused_and_nothing_is_stored(fleet, bad):
    _, gpus, _ = fleet
    with pytest.raises(FrameError) as refused:
        ingest(gpus[("gpu-01", 0)], [process(4242, run=bad)])
    assert refused.value.code == "bad_payload" and "processes[0].run" in refused.value.detail
    assert ProcessSample.objects.count() == 0


def test_an_agent_that_sends_no_run_is_matched_by_os_user(fleet):
    users, gpus, _ = fleet
    [stored] = ingest(gpus[("gpu-01", 0)], [process(4242, user="bob")])
    assert owner_key(stored) == "bob" and ProcessOwners([stored]).of(stored) == users["bob"]


def test_a_booking_counts_its_holders_run_as_use_and_a_foreign_process_as_squatting(fleet):
    users, gpus, run = fleet
    gpu = gpus[("gpu-01", 0)]
    now = timezone.now()
    Reservation.objects.create(
        user=users["alice"], gpu=gpu, start=now - timedelta(minutes=5), end=now + timedelta(hours=1)
    )
    ingest(gpu, [process(4242, run=run.pk), process(5151, user="bob")])
    watch_reservations()
    assert Reservation.objects.get().first_used_at is not None
    [squatting] = ReservationEvent.objects.filter(kind="squatting")
    assert squatting.actor == users["bob"] and squatting.os_user == "bob"


def test_a_false_claim_on_a_booked_gpu_is_squatting_and_says_so(fleet):
    users, gpus, run = fleet
    gpu = gpus[("gpu-01", 1)]
    now = timezone.now()
    Reservation.objects.create(
        user=users["bob"], gpu=gpu, start=now - timedelta(minutes=5), end=now + timedelta(hours=1)
    )
    ingest(gpu, [process(4242, run=run.pk)])
    watch_reservations()
    assert Reservation.objects.get().first_used_at is None
    [squatting] = ReservationEvent.objects.filter(kind="squatting")
    assert f"claims run {run.pk}, which is not placed on this GPU" in squatting.detail


def test_the_gpu_time_of_a_run_costs_its_owner(fleet, settings):
    settings.AGENT_INTERVAL_S = 1.0  # this folder's agents sample every 10 s (conftest); these every second
    users, gpus, run = fleet
    gpu = gpus[("gpu-01", 0)]
    start = (time.time() // 60 - 10) * 60
    if start // 3600 != (start + 120) // 3600:  # two minutes across an hour would make two rows of each owner
        start -= 180
    for second in range(0, 120, 10):
        ingest(gpu, [process(4242, run=run.pk), process(5151, user="bob")], ts=start + second)
    with time_machine.travel(datetime.fromtimestamp(start + 600, UTC), tick=False):
        rollup_usage()
    by_owner = {(row.user.username, row.run_id): row.gpu_seconds for row in UsageHour.objects.select_related("user")}
    assert by_owner == {("alice", run.pk): 12.0, ("bob", None): 12.0}  # one-second intervals (AGENT_INTERVAL_S)


def test_an_idle_alert_of_a_runs_process_goes_to_the_runs_owner(fleet):
    users, gpus, run = fleet
    gpu = gpus[("gpu-01", 0)]
    ingest(gpu, [process(4242, run=run.pk, mem=30000)], util=0)
    [candidate] = candidates_of(gpu_rows(GPU.objects.filter(pk=gpu.pk)), timezone.now())
    assert candidate.owner_id == users["alice"].pk and candidate.run_id == run.pk
