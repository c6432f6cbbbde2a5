"""The agent's unit grants exactly what the kernel asks of a reader of another account's /proc/<pid>/environ.

Runs execute as their owners, so the agent (its own unprivileged account) reads FLEET_RUN_ID from other
accounts' processes. The capabilities come from the unit file itself, so the unit and this test cannot
drift apart.
"""

import os
import shutil
import subprocess
import sys

import pytest

from tests.deploy.roles import BASE_DIR
from tests.deploy.test_service_units import UNITS_DIR, read_unit

NOBODY_UID = 65534
OTHER_UID = 43210  # an account of nobody's: another researcher's run
SYSTEM_PYTHON = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
READ_RUN = "import sys; from monitoring.agent.procinfo import run_of; print(run_of(int(sys.argv[1])))"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or not os.path.exists(SYSTEM_PYTHON),
    reason="needs root, setpriv and the system's Python to act as two other accounts",
)


def agent_capabilities() -> list[str]:
    service = read_unit(UNITS_DIR / "gpu-fleet-agent.service")["Service"]
    [ambient] = service["AmbientCapabilities"]
    return ambient.split()


def setpriv_caps(capabilities: list[str]) -> str:
    return ",".join("+" + name.removeprefix("CAP_").lower() for name in capabilities)


@pytest.fixture
def someone_elses_run():
    """A process of another account started with FLEET_RUN_ID, as a node worker starts a run's processes."""
    process = subprocess.Popen(
        ["sleep", "300"], user=OTHER_UID, group=OTHER_UID, extra_groups=[], env={"FLEET_RUN_ID": "4242"}
    )
    yield process.pid
    process.kill()
    process.wait()


def run_read_by_the_agents_account(pid: int, capabilities: list[str]) -> str:
    argv = ["setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups"]
    if capabilities:
        caps = setpriv_caps(capabilities)
        argv += [f"--inh-caps={caps}", f"--ambient-caps={caps}"]
    argv += [SYSTEM_PYTHON, "-c", READ_RUN, str(pid)]
    done = subprocess.run(argv, env={"PYTHONPATH": str(BASE_DIR)}, cwd="/", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_bounding_set_holds_only_the_ambient_capabilities():
    service = read_unit(UNITS_DIR / "gpu-fleet-agent.service")["Service"]

    assert service["CapabilityBoundingSet"] == service["AmbientCapabilities"]
    assert set(agent_capabilities()) == {"CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"}


def test_with_the_units_capabilities_the_agent_reads_another_accounts_run(someone_elses_run):
    assert run_read_by_the_agents_account(someone_elses_run, agent_capabilities()) == "4242"


def test_without_them_or_with_either_alone_it_reads_nothing(someone_elses_run):
    assert run_read_by_the_agents_account(someone_elses_run, []) == "None"
    for capability in agent_capabilities():
        assert run_read_by_the_agents_account(someone_elses_run, [capability]) == "None", capability
