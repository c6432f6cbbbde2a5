"""The service units in deploy/systemd/: one per part, each safe to enable on the role's install."""

import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from tests.deploy.roles import BASE_DIR, ROLES
from tests.deploy.test_role_installs import DJANGO_ENV

# The first test to ask for a role installs it: the node role writes 1.3 GB, minutes on a busy machine.
pytestmark = pytest.mark.timeout(900)

UNITS_DIR = BASE_DIR / "deploy" / "systemd"
ENV_DIR = BASE_DIR / "deploy" / "env"
EXEC = re.compile(r"^/opt/gpu-fleet/(?P<role>[a-z]+)/bin/(?P<command>\S+)")
# Every part of the product has a unit; the migrate one is the deploy step that runs before the others.
EXPECTED = {
    "gpu-fleet-web.service": "web",
    "gpu-fleet-worker.service": "web",
    "gpu-fleet-beat.service": "web",
    "gpu-fleet-migrate.service": "web",
    "gpu-fleet-node-worker.service": "node",
    "gpu-fleet-agent.service": "agent",
}


def read_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """Sections → key → every value, in order (ExecStart may repeat in a oneshot unit)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), defaultdict(list))
            continue
        key, _, value = line.partition("=")
        current[key.strip()].append(value.strip())
    return sections


def units() -> dict[str, dict]:
    return {path.name: read_unit(path) for path in sorted(UNITS_DIR.glob("*.service"))}


def read_env_file(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))
    return {key: value for key, value in pairs}


def test_every_part_has_a_unit_that_starts_it_from_its_roles_install():
    found = units()

    assert set(found) == set(EXPECTED)
    for name, unit in found.items():
        for command in unit["Service"]["ExecStart"]:
            match = EXEC.match(command)
            assert match, f"{name}: {command} is not a program of a role's venv"
            assert match["role"] == EXPECTED[name]
            assert match["command"] in ROLES[match["role"]].commands


def test_each_unit_runs_as_the_unprivileged_service_user_with_a_restart_policy_and_an_environment_file():
    for name, unit in units().items():
        service = unit["Service"]
        assert service["User"] == ["gpu-fleet"] and service["Group"] == ["gpu-fleet"], name
        assert service["NoNewPrivileges"] == ["yes"], name
        expected_restart = ["no"] if service.get("Type") == ["oneshot"] else ["always"]
        assert service["Restart"] == expected_restart, name
        [env_file] = service["EnvironmentFile"]
        assert env_file.startswith("/etc/gpu-fleet/") and (ENV_DIR / Path(env_file).name).is_file(), name


def test_the_agent_gets_its_token_as_a_credential_never_on_its_command_line():
    service = units()["gpu-fleet-agent.service"]["Service"]

    assert service["LoadCredential"] == ["token:/etc/gpu-fleet/agent.token"]
    assert service["ExecStart"] == ["/opt/gpu-fleet/agent/bin/gpu-fleet-agent --token-file %d/token"]
    assert "FLEET_AGENT_SERVER" in read_env_file(ENV_DIR / "agent.env")


def test_the_node_worker_consumes_its_own_nodes_queue():
    [command] = units()["gpu-fleet-node-worker.service"]["Service"]["ExecStart"]

    assert " -Q node.%H " in command


@pytest.mark.parametrize("env_name, role", [("fleet.env", "web"), ("node.env", "node")])
def test_the_example_environment_files_hold_every_setting_a_django_role_needs_to_start(roles, tmp_path, env_name, role):
    env = read_env_file(ENV_DIR / env_name)
    env["STATIC_ROOT"] = str(tmp_path / "static")  # the example's /var/lib/gpu-fleet is the host's
    installed = roles[role]

    result = installed.run(str(installed.bin("django-admin")), "check", env={"PATH": "/usr/bin:/bin", **env})

    assert set(DJANGO_ENV) <= set(env)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here")
def test_systemd_analyze_verifies_every_unit_against_the_installed_roles(roles, tmp_path):
    for name, role in EXPECTED.items():
        text = (UNITS_DIR / name).read_text().replace(ROLES[role].venv_path, str(roles[role].venv))
        (tmp_path / name).write_text(text)

    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *sorted(str(tmp_path / name) for name in EXPECTED)],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_the_web_server_is_served_as_the_tests_demo_and_runserver_serve_it_with_the_websocket_limits():
    """fleet/serving.py adds the limits from the settings (tests/fleet/test_serving.py); none are spelled here."""
    [command] = units()["gpu-fleet-web.service"]["Service"]["ExecStart"]

    assert command.startswith("/opt/gpu-fleet/web/bin/python -m fleet.serving ")
    assert "--ws-" not in command and "fleet.asgi" not in command
