"""A script follows a run and the fleet over the real server's websockets with an API token: in the
`Authorization` header or the `fleet.bearer` subprotocol, never in the query string."""

import json

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from accounts.tokens import issue
from training.models import Run, RunLog

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alice_run(cast):
    run = Run.objects.create(
        owner=cast["owner"], project=cast["project"], name="ws", workload="digits_cnn", strategy="single"
    )
    RunLog.objects.create(run=run, line="epoch 1")
    return run


def ws_url(asgi_server, path: str) -> str:
    return asgi_server.url.replace("http://", "ws://") + path


def resumed_lines(ws) -> list[str]:
    ws.send(json.dumps({"type": "resume", "metric": 0, "log": 0}))
    while True:
        frame = json.loads(ws.recv(timeout=15))
        if frame["type"] == "update":
            return [row["line"] for row in frame["logs"]]


def test_a_bearer_header_opens_the_run_socket(asgi_server, cast, alice_run):
    key = issue(cast["owner"], "script")[1]
    headers = {"Authorization": f"Bearer {key}"}
    with connect(ws_url(asgi_server, f"/ws/runs/{alice_run.pk}/"), additional_headers=headers, open_timeout=10) as ws:
        assert resumed_lines(ws) == ["epoch 1"]


def test_the_subprotocol_opens_the_run_socket_and_is_echoed(asgi_server, cast, alice_run):
    key = issue(cast["teammate"], "script")[1]
    url = ws_url(asgi_server, f"/ws/runs/{alice_run.pk}/")
    with connect(url, subprotocols=["fleet.bearer", key], open_timeout=10) as ws:
        assert ws.subprotocol == "fleet.bearer"
        assert resumed_lines(ws) == ["epoch 1"]


def test_a_token_opens_the_live_socket(asgi_server, cast):
    key = issue(cast["owner"], "script")[1]
    headers = {"Authorization": f"Token {key}"}
    with connect(ws_url(asgi_server, "/ws/live/"), additional_headers=headers, open_timeout=10) as ws:
        ws.send(json.dumps({"type": "subscribe", "scope": "fleet"}))
        snapshot = json.loads(ws.recv(timeout=15))
    assert snapshot["type"] == "snapshot" and snapshot["scope"] == "fleet"


@pytest.mark.parametrize("header", ["Bearer gft_wrong", "Basic YWxpY2U6cHc="])
def test_a_wrong_token_or_scheme_is_refused_at_the_handshake_with_the_reason(asgi_server, alice_run, header):
    with pytest.raises(InvalidStatus) as refused:
        connect(ws_url(asgi_server, f"/ws/runs/{alice_run.pk}/"), additional_headers={"Authorization": header})
    assert refused.value.response.status_code == 401
    assert refused.value.response.headers["WWW-Authenticate"] == "Bearer, Token"
    assert b"Invalid token." in refused.value.response.body or b"Bearer <token>" in refused.value.response.body


def test_a_token_in_the_query_string_opens_nothing(asgi_server, cast, alice_run):
    key = issue(cast["owner"], "script")[1]
    with pytest.raises(InvalidStatus) as refused:
        connect(ws_url(asgi_server, f"/ws/runs/{alice_run.pk}/?token={key}"))
    assert refused.value.response.status_code == 403  # no session and no page's Origin


def test_someone_elses_run_stays_closed_to_a_token(asgi_server, cast, alice_run):
    key = issue(cast["outsider"], "script")[1]
    url = ws_url(asgi_server, f"/ws/runs/{alice_run.pk}/")
    with pytest.raises(Exception):  # noqa: B017 - closed 4403 during or right after the handshake
        with connect(url, additional_headers={"Authorization": f"Bearer {key}"}, open_timeout=10) as ws:
            ws.recv(timeout=10)
