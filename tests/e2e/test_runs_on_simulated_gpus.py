"""A run launched in the simulated fleet is seen on its GPUs: its owner's tile, booking use, cost and idle alert.

Real parts throughout: a uvicorn server, a simulated agent process (monitoring.agent --simulate) that reports
the real processes a real Celery node worker started for its node, torch workloads on CPU, PostgreSQL.
"""

import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from inventory.models import GPU
from inventory.nodes import add_node
from monitoring.alerts.rules.idle.rule import IdleProcessRule
from monitoring.costs.models import UsageHour
from monitoring.costs.rollup import rollup_usage
from monitoring.storage.models import GPUState
from reservations.booking import BookingRequest, book
from reservations.models import Reservation, ReservationEvent
from reservations.watch import watch_reservations
from tests.conftest import log_in
from tests.support.node_workers import NodeWorker, unique_hostname
from tests.support.processes import BASE_DIR, process_environment
from tests.training.conftest import end_every_run, start_run, wait_for, wait_until
from training.choices import RunStatus
from training.launching.launch import LaunchRequest, check_launch, launch
from training.models import Run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
HOLD_SCRIPT = """
import argparse, time
argparse.ArgumentParser().parse_known_args()
held = bytearray(256 * 1024 * 1024)
for i in range(0, len(held), 4096):
    held[i] = 1  # resident, as GPU memory a stalled run still holds
print("holding memory, doing nothing", flush=True)
time.sleep(900)
"""


@pytest.fixture(scope="module")
def node_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    hostname = unique_hostname("gpu-sim")
    with django_db_blocker.unblock():
        worker = NodeWorker(hostname, tmp_path_factory.mktemp("worker") / f"{hostname}.log")
    yield worker
    worker.stop()


@pytest.fixture
def simulated_node(asgi_server, node_worker, gpu_models, cast, tmp_path):
    """The worker's node with a simulated agent of 2 GPUs connected; yields its GPUs once its hello registered them."""
    _, token = add_node(node_worker.hostname)
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    argv = [
        sys.executable,
        "-m",
        "monitoring.agent",
        "--server",
        asgi_server.url.replace("http://", "ws://"),
        "--token-file",
        str(token_file),
        "--hostname",
        node_worker.hostname,
        "--simulate",
        "2",
        "--scenario",
        "idle",
        "--gpu-model",
        "NVIDIA A100-SXM4-80GB",
    ]
    log = open(tmp_path / "agent.log", "wb")
    agent = subprocess.Popen(argv, env=process_environment(), cwd=BASE_DIR, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: GPU.objects.filter(node__hostname=node_worker.hostname).count() == 2, 180, "the hello")
        yield list(GPU.objects.filter(node__hostname=node_worker.hostname).select_related("node").order_by("index"))
        end_every_run()
    finally:
        agent.terminate()
        agent.wait(timeout=30)
        log.close()


def processes_on(gpu: GPU) -> list[dict]:
    return GPUState.objects.get(gpu=gpu).processes or []


def run_process(gpu: GPU, run_id: int) -> dict | None:
    return next((p for p in processes_on(gpu) if p.get("run") == run_id), None)


def test_a_run_launched_on_my_booking_shows_on_its_gpu_tile_with_my_name(browser, asgi_server, simulated_node):
    gpu = simulated_node[0]
    context = browser.new_context(viewport={"width": 1440, "height": 900}, timezone_id="UTC")
    page = context.new_page()
    page.set_default_timeout(90_000)  # the machine may be busy: each step waits on a state, never a fixed time
    log_in(page, asgi_server, "alice")
    page.goto(f"{asgi_server.url}/reservations/book/?gpu={gpu.pk}")
    now = datetime.now(UTC)
    page.fill("#id_start", now.strftime("%Y-%m-%dT%H:%M"))
    page.fill("#id_end", (now + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"))
    page.click("button[type=submit]:has-text('Book')")
    page.wait_for_selector("text=Booked 1 GPU(s)")
    booking = Reservation.objects.get()

    page.goto(asgi_server.url + "/runs/new/")
    page.fill("#id_name", "on my booking")
    page.select_option("#id_workload", "digits_cnn")
    page.fill("#id_epochs", "500")
    page.check(f"[data-node='{gpu.node.hostname}'] input[name=gpus] >> nth=0")
    page.click("button[type=submit]")
    try:
        page.wait_for_url(re.compile(r"/runs/\d+/$"), timeout=120_000)
    except PlaywrightTimeout as timeout:
        errors = page.locator(".errorlist, .errors").all_inner_texts()
        raise AssertionError(f"the launch did not start: {errors}") from timeout
    run = wait_for(Run.objects.get(name="on my booking"), RunStatus.RUNNING)

    wait_until(lambda: run_process(gpu, run.pk), 120, "the run's process in its GPU's reported state")
    page.goto(f"{asgi_server.url}/fleet/")
    tile = page.locator(f"article.tile[data-gpu='{gpu.uuid}']")
    try:
        expect(tile.locator(f"[data-run='{run.pk}']")).to_be_visible(timeout=90_000)
    except AssertionError as missing:
        raise AssertionError(f"tile: {tile.inner_html()!r}; stored: {processes_on(gpu)!r}") from missing
    expect(tile.locator("[data-field=procs]")).to_contain_text("alice")
    context.close()

    # The same telemetry makes the booking used (nobody squats on it) and prices the run's GPU time.
    watch_reservations()
    booking.refresh_from_db()
    assert booking.first_used_at is not None
    assert not ReservationEvent.objects.filter(kind="squatting").exists()
    with time_machine.travel(timezone.now() + timedelta(minutes=2), tick=False):
        rollup_usage()
    usage = UsageHour.objects.filter(gpu=gpu, run_id=run.pk).select_related("user")
    assert usage and {row.user.username for row in usage} == {"alice"}
    assert sum(row.gpu_seconds for row in usage) > 0


def test_an_idle_stall_of_a_run_alerts_its_owner_and_a_false_claim_is_not_believed(
    simulated_node, cast, settings, tmp_path
):
    settings.RUN_SCRIPT_DIRS = [str(tmp_path)]
    settings.ALERT_IDLE_MIN_MEMORY_MIB = 128
    settings.ALERT_IDLE_WINDOW_MIN = 1
    script = tmp_path / "hold.py"
    script.write_text(HOLD_SCRIPT)
    script.chmod(0o644)
    run_gpu, other_gpu = simulated_node
    run = start_run(cast["owner"], [run_gpu], workload="script", script=str(script))
    wait_until(lambda: run_process(run_gpu, run.pk), 90, "the run's process on its GPU")
    started = run_process(run_gpu, run.pk)["started_at"]

    # A process claiming the run on a GPU the run is not placed on: reported, flagged, never the run's.
    env = {**os.environ, "FLEET_NODE": run_gpu.node.hostname, "FLEET_RUN_ID": str(run.pk), "CUDA_VISIBLE_DEVICES": "1"}
    impostor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], env=env)
    try:
        wait_until(lambda: any(p.get("unverified_run") == run.pk for p in processes_on(other_gpu)), 60, "the claim")
        assert not any(p.get("run") for p in processes_on(other_gpu))
    finally:
        impostor.kill()
        impostor.wait()

    def idle_finding():
        if time.time() < started + 62:
            return None
        found = IdleProcessRule().evaluate(timezone.now(), []).findings
        return next((f for f in found if f.gpu_id == run_gpu.pk), None)

    wait_until(idle_finding, 180, "an idle alert for the stalled run")
    finding = idle_finding()
    assert finding.owner_id == cast["owner"].pk and finding.details["run_id"] == run.pk


def test_my_own_command_on_my_booking_makes_it_used_and_nobody_squats(simulated_node, cast, tmp_path):
    gpu = simulated_node[0]
    [booking] = book(
        BookingRequest(user=cast["owner"], gpus=[gpu], start=timezone.now(), end=timezone.now() + timedelta(hours=2))
    )
    # bash starts the program (it does not exec it: a line follows), so the GPU's process is the shell's child.
    line = "python -c 'import time; print(\"up\", flush=True); time.sleep(600)'; echo done"
    request = LaunchRequest(
        user=cast["owner"], workload="command", shell_line=line, booking=str(booking.booking), workdir=str(tmp_path)
    )
    plan, errors = check_launch(request)
    assert not errors, errors
    run = wait_for(launch(plan), RunStatus.RUNNING)

    def python_reported():
        process = run_process(gpu, run.pk)
        return process is not None and process["name"].startswith("python")

    wait_until(python_reported, 90, "the command's python process in its GPU's reported state")
    assert [process["run"] for process in processes_on(gpu)] == [run.pk]  # bash, its parent, is not a GPU process

    report = watch_reservations()
    booking.refresh_from_db()
    assert booking.first_used_at is not None and report.first_used == 1
    assert report.squatting == []
    assert not ReservationEvent.objects.filter(kind="squatting").exists()
