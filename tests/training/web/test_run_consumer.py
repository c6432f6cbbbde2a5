"""The run websocket: only for users who may see the run; resumes what the page missed; relays updates."""

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.db import connections

from fleet.asgi import application
from training import broadcast
from training.models import Run, RunLog, RunMetric
from training.serializers import state_payload

pytestmark = pytest.mark.django_db(transaction=True)


def session_cookie(user) -> str:
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    # The backend that logs people in (the first one listed only guards against password guessing).
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return session.session_key


async def connect(run_id: int, user=None, origin: bytes = b"http://localhost"):
    headers = [(b"origin", origin), (b"host", b"localhost")]
    if user is not None:
        key = await sync_to_async(session_cookie)(user)
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={key}".encode()))
    communicator = WebsocketCommunicator(application, f"/ws/runs/{run_id}/", headers=headers)
    connected, code = await communicator.connect(timeout=5)
    return communicator, connected, code


@pytest.fixture(autouse=True)
async def close_consumer_connections():
    # The consumer's database work runs in asgiref's worker thread; its connection must not outlive the test.
    yield
    await sync_to_async(connections.close_all)()


@pytest.fixture
def alice_run(cast):
    return Run.objects.create(
        owner=cast["owner"], project=cast["project"], name="ws", workload="digits_cnn", strategy="single"
    )


async def test_a_teammate_resumes_and_then_receives_live_updates(cast, alice_run):
    first = await sync_to_async(RunMetric.objects.create)(run=alice_run, ts=alice_run.created, step=1, loss=2.0)
    await sync_to_async(RunMetric.objects.create)(run=alice_run, ts=alice_run.created, step=2, loss=1.5)
    await sync_to_async(RunLog.objects.create)(run=alice_run, line="hello")
    communicator, connected, _ = await connect(alice_run.pk, cast["teammate"])
    assert connected

    await communicator.send_json_to({"type": "resume", "metric": first.pk, "log": 0})
    backlog = await communicator.receive_json_from(timeout=5)
    assert [m["step"] for m in backlog["metrics"]] == [2]
    assert [entry["line"] for entry in backlog["logs"]] == ["hello"]
    assert backlog["run"]["status"] == "queued"

    fresh = await sync_to_async(RunMetric.objects.create)(run=alice_run, ts=alice_run.created, step=3, loss=1.0)
    payload = await sync_to_async(lambda: state_payload(Run.objects.get(pk=alice_run.pk), [fresh]))()
    await sync_to_async(broadcast.send_now)(alice_run.pk, payload)
    update = await communicator.receive_json_from(timeout=5)
    assert update["type"] == "update" and update["metrics"][0]["step"] == 3
    await communicator.disconnect()


async def test_an_outsider_is_turned_away(cast, alice_run):
    communicator, connected, code = await connect(alice_run.pk, cast["outsider"])
    assert not connected and code == 4403


async def test_an_anonymous_visitor_is_turned_away(alice_run):
    communicator, connected, code = await connect(alice_run.pk)
    assert not connected and code == 4403


async def test_a_foreign_origin_is_refused(cast, alice_run):
    communicator, connected, _ = await connect(alice_run.pk, cast["owner"], origin=b"http://evil.example")
    assert not connected


@pytest.mark.parametrize("frame", ["not json", '{"type": "dance"}', '{"type": "resume", "metric": "x", "log": 0}'])
async def test_a_bad_frame_gets_an_error_and_the_socket_stays_open(cast, alice_run, frame):
    communicator, connected, _ = await connect(alice_run.pk, cast["owner"])
    await communicator.send_to(text_data=frame)
    reply = await communicator.receive_json_from(timeout=5)
    assert reply["type"] == "error" and reply["detail"]
    await communicator.send_json_to({"type": "resume", "metric": 0, "log": 0})
    assert (await communicator.receive_json_from(timeout=5))["type"] == "update"
    await communicator.disconnect()
