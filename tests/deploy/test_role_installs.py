"""Each role installs into a fresh venv from wheels alone, holds what it runs and nothing it does not."""

import json
import os

import pytest

from tests.deploy.roles import BASE_DIR, ROLES

# The first test to ask for a role installs it: the node role writes 1.3 GB, minutes on a busy machine.
pytestmark = pytest.mark.timeout(900)

AGENT_MAX_BYTES = 10_000_000
# Settings the Django roles need to start; nothing connects to them in these checks.
DJANGO_ENV = {
    "DJANGO_SETTINGS_MODULE": "fleet.settings",
    "DATABASE_URL": "postgresql://fleet@db.invalid:5432/fleet",
    "REDIS_URL": "redis://redis.invalid:6379/0",
    "SECRET_KEY": "role-install-check",
}

FIND = "import importlib.util, sys; print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m)))"


def importable(installed, modules) -> set[str]:
    result = installed.run(str(installed.python), "-c", FIND, *modules)
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def django_env(tmp_path) -> dict:
    return {**os.environ, **DJANGO_ENV, "STATIC_ROOT": str(tmp_path / "static")}


def test_the_agent_install_has_no_django_or_torch_and_fits_in_10_mb(roles):
    agent = roles["agent"]

    assert agent.size_bytes() <= AGENT_MAX_BYTES, f"{agent.size_bytes() / 1e6:.1f} MB in {agent.site_packages}"
    assert importable(agent, ROLES["agent"].present) == set(ROLES["agent"].present)
    assert importable(agent, ROLES["agent"].absent) == set()
    result = agent.run(str(agent.python), "-c", "import django")
    assert result.returncode == 1 and "No module named 'django'" in result.stderr


def test_the_agent_command_explains_itself(roles):
    result = roles["agent"].run(str(roles["agent"].bin("gpu-fleet-agent")), "--help")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: gpu-fleet-agent")
    for option in ("--server", "--token-file", "--simulate", "--once"):
        assert option in result.stdout
    assert "FLEET_AGENT_TOKEN" in result.stdout and "--token " not in result.stdout


def test_the_installed_agent_reads_simulated_gpus_from_its_own_install(roles):
    agent = roles["agent"]

    result = agent.run(str(agent.bin("gpu-fleet-agent")), "--simulate", "2", "--hostname", "gpu-r1", "--once")

    assert result.returncode == 0, result.stderr
    hello = json.loads(result.stdout)["hello"]
    assert hello["hostname"] == "gpu-r1" and len(hello["gpus"]) == 2
    where = agent.run(str(agent.python), "-c", "import monitoring.agent as a; print(a.__path__[0])")
    assert where.stdout.strip() == str(agent.site_packages / "monitoring" / "agent")


def test_the_web_install_has_no_torch_or_scikit_learn(roles):
    web = roles["web"]

    assert importable(web, ROLES["web"].absent) == set()
    assert importable(web, ROLES["web"].present) == set(ROLES["web"].present)


def test_the_web_install_passes_django_checks_and_serves_its_templates_and_assets_from_the_install(roles, tmp_path):
    web = roles["web"]
    env = django_env(tmp_path)

    check = web.run(str(web.bin("django-admin")), "check", env=env)
    probe = web.run(
        str(web.python),
        "-c",
        "import fleet.asgi; from django.template.loader import get_template; "
        "from django.contrib.staticfiles import finders; "
        "print(get_template('base.html').origin.name); print(finders.find('js/plotly.min.js'))",
        env=env,
    )

    assert check.returncode == 0, check.stderr
    assert "System check identified no issues" in check.stdout
    assert probe.returncode == 0, probe.stderr
    template, plotly = probe.stdout.split()
    assert template == str(web.site_packages / "templates" / "base.html")
    assert plotly == str(web.site_packages / "static" / "js" / "plotly.min.js")


def test_the_web_install_knows_every_task_the_central_worker_and_beat_run(roles, tmp_path):
    web = roles["web"]
    listing = (
        "from fleet.celery import app; from django.conf import settings; app.loader.import_default_modules(); "
        "print(' '.join(sorted(app.tasks))); "
        "print(' '.join(sorted(e['task'] for e in settings.CELERY_BEAT_SCHEDULE.values())))"
    )

    result = web.run(str(web.python), "-c", listing, env=django_env(tmp_path))

    assert result.returncode == 0, result.stderr
    tasks, scheduled = (set(line.split()) for line in result.stdout.splitlines())
    assert scheduled <= tasks
    assert "training.tasks.run_on_node" in tasks


def test_the_node_install_trains_a_workload_from_its_own_install(roles):
    node = roles["node"]

    assert importable(node, ROLES["node"].present) == set(ROLES["node"].present)
    assert importable(node, ROLES["node"].absent) == set()
    result = node.run(str(node.python), "-m", "training.workloads.digits_cnn", "--tiny", "--epochs", "2", timeout=300)

    assert result.returncode == 0, result.stderr[-2000:]
    events = [
        json.loads(line.split(" ", 1)[1]) for line in result.stdout.splitlines() if line.startswith("FLEET_EVENT ")
    ]
    done = [event for event in events if event["event"] == "done"]
    assert len(done) == 1 and done[0]["accuracy"] > 0.5


def test_every_role_has_the_programs_its_service_units_start(roles):
    for name, role in ROLES.items():
        for command in role.commands:
            assert roles[name].bin(command).is_file(), f"{name} has no {command}"


def test_the_install_guide_gives_each_role_its_one_command():
    guide = (BASE_DIR / "docs" / "install.md").read_text()

    for role in ROLES.values():
        assert role.docs_command in guide, f"docs/install.md lacks the {role.name} install: {role.docs_command}"
