import os
import pwd
import subprocess
import sys
import time

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
