import os
import pwd
import subprocess
import sys
import time

import pytest

from monitoring.agent import procinfo


def wait_for_exec(pid):
    deadline = time.monotonic() + 10
    while "marker-arg" not in (procinfo._from_proc(pid)["cmdline"] or ""):
        assert time.monotonic() < deadline, "child never started"
        time.sleep(0.01)


def test_proc_and_psutil_agree_on_a_running_process():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "marker-arg"])
    try:
        wait_for_exec(child.pid)
        via_proc = procinfo._from_proc(child.pid)
        via_psutil = procinfo._from_psutil(child.pid)
    finally:
        child.kill()
        child.wait()

    assert via_proc["user"] == via_psutil["user"] == pwd.getpwuid(os.getuid()).pw_name
    assert via_proc["cmdline"] == via_psutil["cmdline"]
    assert via_proc["cmdline"].endswith("marker-arg")
    assert abs(via_proc["started_at"] - via_psutil["started_at"]) < 1.0
    assert abs(via_proc["started_at"] - time.time()) < 60


def test_a_gone_process_has_no_owner_and_no_start_time():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()

    expected = {"user": None, "name": None, "cmdline": None, "started_at": None}
    assert procinfo._from_proc(child.pid) == expected
    assert procinfo._from_psutil(child.pid) == expected


def test_a_process_the_fleet_started_names_its_run():
    env = {**os.environ, "FLEET_RUN_ID": "42"}
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "marker-arg"], env=env)
    try:
        wait_for_exec(child.pid)
        assert procinfo.process_info(child.pid)["run"] == 42
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("value", [b"", b"0", b"-1", b"abc", b"1e3", b"9" * 40, b"\xff"])
def test_a_run_id_that_is_not_one_is_no_claim(value):
    assert procinfo.parse_run(b"A=1\0FLEET_RUN_ID=" + value + b"\0B=2") is None
