"""A root node worker runs a run's processes as the owner's linked OS account; with RUN_ACCOUNT_FALLBACK=refuse,
a run that cannot have that account is refused before anything starts."""

import os
import pwd
import subprocess
import sys
import sysconfig

import psutil
import pytest

from inventory.models import OsAccount
from tests.support.node_workers import FAST_RUN_SETTINGS, NodeWorker, unique_hostname
from tests.support.processes import BASE_DIR, wait_for_other_sessions_to_end
from tests.training.conftest import DIGITS_LONG, add_node, end_every_run, gpus_of, start_run, wait_for, wait_until
from training.choices import RunStatus
from training.launching.launch import LaunchRequest, check_launch
from training.models import Run

NOBODY = pwd.getpwnam("nobody")
# The tests' interpreter may sit where other accounts cannot reach it (a pyenv under /root): the runs start
# on the system's Python of the same version (RUN_PYTHON), with this environment's packages, which nobody can read.
SYSTEM_PYTHON = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
PACKAGES = sysconfig.get_paths()["purelib"]


def nobody_can_run_the_workloads() -> bool:
    if os.geteuid() != 0 or not os.path.exists(SYSTEM_PYTHON):
        return False
    env = {"PYTHONPATH": f"{BASE_DIR}{os.pathsep}{PACKAGES}", "HOME": NOBODY.pw_dir}
    probe = [SYSTEM_PYTHON, "-c", "import torch, sklearn"]
    try:
        done = subprocess.run(probe, env=env, user=NOBODY.pw_uid, group=NOBODY.pw_gid, cwd="/", timeout=120)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not nobody_can_run_the_workloads(), reason="needs root and a Python that nobody can run"),
]


@pytest.fixture(scope="module")
def refusing_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    """A root node worker that refuses a run it cannot start under its owner's own account."""
    hostname = unique_hostname("node-owner")
    settings = {
        **FAST_RUN_SETTINGS,
        "RUN_ACCOUNT_FALLBACK": "refuse",
        "RUN_PYTHON": SYSTEM_PYTHON,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(BASE_DIR), os.environ.get("PYTHONPATH"), PACKAGES])),
    }
    log = tmp_path_factory.mktemp("worker") / f"{hostname}.log"
    with django_db_blocker.unblock():
        worker = NodeWorker(hostname, log, run_settings=settings)
    yield worker
    worker.stop()
    with django_db_blocker.unblock():
        wait_for_other_sessions_to_end()


@pytest.fixture
def node(refusing_worker, gpu_models, settings):
    settings.RUN_ACCOUNT_FALLBACK = "refuse"
    node = add_node(refusing_worker.hostname)
    yield node
    end_every_run()


def run_processes(run: Run) -> list[psutil.Process]:
    part = run.nodes.get()
    if part.pid is None:
        return []
    try:
        root = psutil.Process(part.pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def test_the_run_runs_as_the_owners_linked_account(node, cast):
    researcher = cast["owner"]
    OsAccount.objects.create(username="nobody", user=researcher)
    run = start_run(researcher, gpus_of(node, 1), **{**DIGITS_LONG, "epochs": 50})
    wait_for(run, RunStatus.RUNNING, timeout_s=120)
    wait_until(lambda: run_processes(run), what="the run's processes to appear")
    processes = run_processes(run)
    assert {p.uids().real for p in processes} == {NOBODY.pw_uid}
    assert {p.gids().real for p in processes} == {NOBODY.pw_gid}
    environ = processes[0].environ()
    assert environ["HOME"] == NOBODY.pw_dir and environ["USER"] == "nobody"
    assert environ["FLEET_RUN_ID"] == str(run.pk)
    output = environ["FLEET_OUTPUT_DIR"]
    assert os.stat(output).st_uid == NOBODY.pw_uid  # the run's own directory is writable by its account
    run.refresh_from_db()
    assert run.environment["account"] == "nobody"


def test_without_a_linked_account_the_launch_is_refused_before_anything_is_queued(node, cast):
    request = LaunchRequest(user=cast["owner"], workload="digits_cnn", strategy="single", gpus=gpus_of(node, 1))
    plan, errors = check_launch(request)
    assert plan is None and "has none linked" in errors["account"]
    assert not Run.objects.exists()


def test_an_account_missing_on_the_node_fails_the_run_before_it_starts(node, cast):
    researcher = cast["owner"]
    OsAccount.objects.create(username="no-such-account-x", user=researcher)
    run = start_run(researcher, gpus_of(node, 1))
    run = wait_for(run, RunStatus.FAILED, timeout_s=120)
    assert "the OS account no-such-account-x does not exist" in run.error
    assert run.nodes.get().pid is None  # nothing was started
