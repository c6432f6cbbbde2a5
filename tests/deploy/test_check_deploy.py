"""Django's deployment checklist is clean with the production values deploy/env/fleet.env documents."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FLEET_ENV = ROOT / "deploy" / "env" / "fleet.env"
HTTPS_SETTINGS = (
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SECURE_SSL_REDIRECT",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_PROXY_SSL_HEADER",
)


def documented() -> dict[str, str]:
    values = {}
    for line in FLEET_ENV.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    return values


def check_deploy(values: dict[str, str], tmp_path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in HTTPS_SETTINGS and k != "DEBUG"}
    env |= values
    # The placeholders a deployment replaces: a real secret, a static folder this test may write.
    env |= {"SECRET_KEY": secrets.token_urlsafe(50), "STATIC_ROOT": str(tmp_path / "static")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    argv = [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def issues(result: subprocess.CompletedProcess) -> set[str]:
    """The check ids reported, drf-spectacular's notes on the API schema (W001, W002) included."""
    return set(re.findall(r"\((\w+\.[CEW]\d+)\)", result.stdout + result.stderr))


def test_the_documented_production_values_pass_check_deploy(tmp_path):
    values = documented()
    assert {name for name in HTTPS_SETTINGS} <= set(values), "fleet.env documents every HTTPS setting"
    result = check_deploy(values, tmp_path)
    assert issues(result) == set(), result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_without_them_the_checklist_names_what_is_missing(tmp_path):
    values = {k: v for k, v in documented().items() if k not in HTTPS_SETTINGS}
    result = check_deploy(values, tmp_path)
    assert {"security.W004", "security.W008", "security.W012", "security.W016"} <= issues(result)
