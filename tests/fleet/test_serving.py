"""Every way we serve has production's websocket limits (fleet/serving.py): `manage.py runserver` and the
demo's web server refuse an oversize agent message unread (1009) and decline compression, as the
shipped unit and the tests' server do (tests/monitoring/ingest/test_websocket_layer.py)."""

import asyncio
import sys

import pytest
from django.core.management import get_commands

from fleet import serving
from inventory.nodes import add_node
from tests.support.processes import ServerProcess, process_environment, wait_for_other_sessions_to_end
from tests.support.websocket_limits import oversize_refusal

pytestmark = pytest.mark.django_db(transaction=True)

SERVERS = {
    "manage.py runserver": lambda port: [sys.executable, "manage.py", "runserver", "--noreload", str(port)],
    "the demo's web server": serving.local_command,
}


@pytest.mark.parametrize("server", SERVERS)
def test_the_server_refuses_an_oversize_agent_message_unread_and_compresses_nothing(server, tmp_path):
    _, token = add_node("gpu-oversize")
    process = ServerProcess(process_environment(), tmp_path / "server.log", command=SERVERS[server])
    try:
        negotiated, code = asyncio.run(oversize_refusal(process.port, token, "gpu-oversize"))
    finally:
        process.stop()
        wait_for_other_sessions_to_end()

    assert negotiated == []
    assert code == 1009


def test_runserver_is_the_products_and_no_other_app_serves_websockets():
    commands = get_commands()

    assert commands["runserver"] == "fleet"
    assert "daphne" not in commands.values()
