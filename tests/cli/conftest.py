"""The command line as a researcher installs it: `pip install ./clients/fleet-cli` into a fresh venv, once per
session, driving the suite's real ASGI server (and, for runs, a real node worker)."""

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.processes import BASE_DIR

CLI_DIST = BASE_DIR / "clients" / "fleet-cli"


@pytest.fixture(scope="session")
def fleet_bin(tmp_path_factory) -> Path:
    """The `fleet` script of a fresh venv with the CLI installed the documented way."""
    venv = tmp_path_factory.mktemp("cli") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # A copy to install from: pip's build would otherwise leave build/ and *.egg-info in the checkout.
    source = tmp_path_factory.mktemp("cli-source") / "fleet-cli"
    subprocess.run(["cp", "-r", str(CLI_DIST), str(source)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(source)]
    done = subprocess.run(pip, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return venv / "bin" / "fleet"


@dataclass
class Answer:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


class Fleet:
    """Runs `fleet` as a user would, with a home of its own (its config file) and the given environment."""

    def __init__(self, binary: Path, home: Path, server_url: str):
        self.binary, self.home, self.server_url = binary, home, server_url

    @property
    def config_file(self) -> Path:
        return self.home / "config" / "gpu-fleet" / "config.toml"

    def env(self, **extra: str) -> dict:
        env = {key: value for key, value in os.environ.items() if not key.startswith("FLEET_")}
        env.update(HOME=str(self.home), XDG_CONFIG_HOME=str(self.home / "config"), TZ="Europe/Berlin", **extra)
        return env

    def __call__(self, *args: str, timeout_s: float = 120, **env: str) -> Answer:
        done = subprocess.run(
            [str(self.binary), *args], env=self.env(**env), capture_output=True, text=True, timeout=timeout_s
        )
        return Answer(done.returncode, done.stdout, done.stderr)

    def start(self, *args: str, **env: str) -> subprocess.Popen:
        argv = [str(self.binary), *args]
        return subprocess.Popen(argv, env=self.env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def logged_in(self, user, name: str = "cli") -> "Fleet":
        """Log in with a fresh token of `user`, as `fleet login --token` does."""
        from accounts.tokens import issue

        key = issue(user, name)[1]
        answer = self("login", "--server", self.server_url, "--token", key)
        assert answer.code == 0, answer.err
        return self


@pytest.fixture
def fleet(fleet_bin, asgi_server, tmp_path) -> Fleet:
    """One researcher's terminal (use with transaction=True: the server reads the test's rows)."""
    return Fleet(fleet_bin, tmp_path / "home-1", asgi_server.url)


@pytest.fixture
def other_fleet(fleet_bin, asgi_server, tmp_path) -> Fleet:
    """A second researcher's terminal, with a config of its own."""
    return Fleet(fleet_bin, tmp_path / "home-2", asgi_server.url)
