"""venv and conda environments by path: allowed only inside RUN_ENV_DIRS (after symlinks), found, recorded."""

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

from tests.training.conftest import gpus_of
from training import environments
from training.launching.launch import LaunchRequest, check_launch
from training.models import Run

pytestmark = pytest.mark.django_db


def fake_env(path, marker="pyvenv.cfg"):
    """A directory shaped like an environment: bin/python and its tool's marker."""
    (path / "bin").mkdir(parents=True)
    (path / "bin" / "python").write_text("#!/bin/sh\n")
    (path / marker).mkdir() if marker == "conda-meta" else (path / marker).write_text("home = /usr/bin\n")
    return path


@pytest.fixture
def roots(tmp_path, settings):
    allowed, elsewhere = tmp_path / "envs", tmp_path / "elsewhere"
    allowed.mkdir()
    elsewhere.mkdir()
    settings.RUN_ENV_DIRS = [str(allowed)]
    return allowed, elsewhere


def refusal(cast, node, kind, ref) -> str:
    request = LaunchRequest(
        user=cast["owner"],
        workload="command",
        gpus=gpus_of(node, 1),
        command=["python", "x.py"],
        env_kind=kind,
        env_ref=str(ref),
    )
    plan, errors = check_launch(request)
    assert plan is None and not Run.objects.exists()
    return errors["env_ref"]


def test_a_venv_outside_the_allowed_roots_is_refused_before_anything_is_stored(cast, quiet_node, roots):
    allowed, elsewhere = roots
    outside = fake_env(elsewhere / "mine")
    assert refusal(cast, quiet_node, "venv", outside) == (
        f"{outside} is not inside an allowed environment root ({allowed}; RUN_ENV_DIRS)."
    )


def test_a_symlink_inside_a_root_that_points_out_of_it_is_refused(cast, quiet_node, roots):
    allowed, elsewhere = roots
    link = allowed / "sneaky"
    os.symlink(fake_env(elsewhere / "mine"), link)
    assert "is not inside an allowed environment root" in refusal(cast, quiet_node, "venv", link)


@pytest.mark.parametrize(
    ("dirs", "ref", "words"),
    [
        ([], "/srv/envs/a", "Python venvs are turned off here: an admin lists their allowed roots in RUN_ENV_DIRS."),
        (None, "envs/a", "must be absolute, not 'envs/a'"),
        (None, "", "Give the path of a venv on the node."),
    ],
)
def test_a_venv_is_refused_when_turned_off_relative_or_missing(cast, quiet_node, roots, settings, dirs, ref, words):
    if dirs is not None:
        settings.RUN_ENV_DIRS = dirs
    assert words in refusal(cast, quiet_node, "venv", ref)


def test_a_directory_that_is_not_that_kind_of_environment_is_refused(cast, quiet_node, roots):
    allowed, _ = roots
    conda = fake_env(allowed / "conda-env", marker="conda-meta")
    assert refusal(cast, quiet_node, "venv", conda) == f"{conda} is not a venv: it has no bin/python and pyvenv.cfg."
    assert environments.get("conda").check(str(conda)) is None


def test_a_venv_the_web_server_cannot_see_is_left_for_the_node_to_check(roots):
    allowed, _ = roots
    venv = environments.get("venv")
    assert venv.check(str(allowed / "on-the-node")) is None
    assert venv.check_on_node(str(allowed / "on-the-node")) == f"{allowed / 'on-the-node'} does not exist on this node."


def test_environments_under_the_roots_are_found_two_levels_down(roots):
    allowed, elsewhere = roots
    top = fake_env(allowed / "top")
    deep = fake_env(allowed / "lab" / "torch")
    fake_env(allowed / "a" / "b" / "too-deep")
    conda = fake_env(allowed / "lab" / "jax", marker="conda-meta")
    os.symlink(fake_env(elsewhere / "out"), allowed / "link-out")
    assert environments.get("venv").discover() == [str(deep), str(top)]
    assert environments.get("conda").discover() == [str(conda)]


def test_a_conda_envs_record_lists_its_packages_as_conda_exports_them(roots):
    allowed, _ = roots
    conda = fake_env(allowed / "jax", marker="conda-meta")
    for name, version, build in [("numpy", "2.1.0", "py311h0"), ("python", "3.11.9", "h955ad1f_0")]:
        (conda / "conda-meta" / f"{name}-{version}-{build}.json").write_text(
            json.dumps({"name": name, "version": version, "build": build})
        )
    record = environments.get("conda").record(str(conda))
    assert record["packages"] == ["numpy=2.1.0=py311h0", "python=3.11.9=h955ad1f_0"]
    assert record["python"] == f"{conda}/bin/python" and record["kind"] == "conda"
    assert environments.get("conda").variables(str(conda), {"PATH": "/usr/bin"}) == {
        "PATH": f"{conda}/bin:/usr/bin",
        "CONDA_PREFIX": str(conda),
    }


def test_a_venvs_record_lists_its_packages_as_pip_freeze_does(roots, tmp_path):
    helper = settings.BASE_DIR / "clients" / "gpu_fleet_events"
    venv = roots[0] / "real"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", str(venv / "bin" / "python")]
    # A package from a wheel built here: pip writes its URL and hash (PEP 610), and freeze shows them.
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path)]
    subprocess.run([*build, str(helper)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("gpu_fleet_events-*.whl"))
    subprocess.run([*pip, "install", "-q", "--no-index", str(wheel)], check=True, capture_output=True)

    record = environments.get("venv").record(str(venv))

    frozen = subprocess.run([*pip, "freeze", "--all"], check=True, capture_output=True, text=True).stdout
    assert record["packages"] == frozen.splitlines()
    assert any(line.startswith("gpu-fleet-events @ file://") for line in record["packages"])
    assert record["version"] == f"Python {sys.version.split()[0]}" and record["packages_by"] == "pip freeze"
