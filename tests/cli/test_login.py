"""fleet login, whoami, logout: a named token kept only for its owner, and every bad start refused in one line."""

import os
import pty
import select
import stat
import subprocess
import time

import pytest

from accounts.models import ApiToken
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)


def on_a_terminal(fleet, *args: str, answers: dict[str, str], timeout_s: float = 60) -> tuple[int, str]:
    """Run fleet on a pseudo-terminal, typing each answer when its prompt appears; (exit code, what it showed)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(fleet.binary), *args], env=fleet.env(), stdin=follower, stdout=follower, stderr=follower
    )
    os.close(follower)
    shown, pending, deadline = b"", dict(answers), time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the other end closed: the program exited
                break
            shown += chunk
            for prompt in [p for p in pending if p.encode() in shown]:
                os.write(leader, pending.pop(prompt).encode() + b"\n")
        elif process.poll() is not None:
            break
    os.close(leader)
    return process.wait(timeout=10), shown.decode(errors="replace")


def test_a_password_typed_on_a_terminal_becomes_a_token_only_its_owner_can_read(fleet, cast):
    code, shown = on_a_terminal(
        fleet, "login", "--server", fleet.server_url, answers={"Username:": "alice", "Password:": PASSWORD}
    )

    assert code == 0, shown
    assert PASSWORD not in shown  # getpass does not echo it
    token = ApiToken.objects.get(user=cast["owner"])
    assert token.name.startswith("fleet-cli on ") and token.expires_at is not None
    assert stat.S_IMODE(fleet.config_file.stat().st_mode) == 0o600
    assert "alice on " in fleet("whoami").out

    assert fleet("logout").code == 0
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert "token" not in fleet.config_file.read_text()


def test_a_given_token_is_checked_stored_and_overridden_by_the_environment(fleet, other_fleet, cast):
    fleet.logged_in(cast["owner"])
    assert fleet("whoami").out.startswith("alice on ")

    from accounts.tokens import issue

    bobs = issue(cast["teammate"], "ci")[1]
    assert fleet("whoami", FLEET_TOKEN=bobs).out.startswith("bob on ")
    # a second user with no file at all works from the environment alone
    assert other_fleet("whoami", FLEET_SERVER=fleet.server_url, FLEET_TOKEN=bobs).code == 0


def test_a_revoked_token_says_to_log_in_again(fleet, cast):
    fleet.logged_in(cast["owner"])
    ApiToken.objects.filter(user=cast["owner"]).update(revoked_at="2026-01-01T00:00Z")

    answer = fleet("status")

    assert answer.code == 1
    assert answer.err.strip() == "fleet status: Token revoked. Run fleet login."


@pytest.mark.parametrize(
    "server, says",
    [
        ("{url}/fleet", "answered 404 with an HTML page, not the GPU Fleet API"),  # a page, not the API
        ("http://127.0.0.1:9", "Cannot reach http://127.0.0.1:9"),  # nothing listens there
        ("{url}", "Invalid token."),
    ],
)
def test_a_bad_server_or_token_is_one_line_and_nothing_is_stored(fleet, cast, server, says):
    answer = fleet("login", "--server", server.format(url=fleet.server_url), "--token", "gft_wrong")

    assert answer.code == 1
    assert says in answer.err and len(answer.err.strip().splitlines()) == 1, answer.err
    assert not fleet.config_file.exists()
