"""/ws/notifications/: the live badge gets the unread count, then each new notification as it is delivered."""

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections

from monitoring.notify.from_events import dispatch_event
from monitoring.notify.transports.inapp.consumer import NotificationConsumer
from tests.support.alerts import open_alert

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
async def close_thread_connections():
    """The consumer's database thread keeps a connection; close it so the test database can be dropped."""
    yield
    await sync_to_async(connections.close_all)()


@pytest.fixture
def people(django_user_model):
    # No email addresses: these tests are about the in-app channel only.
    return {name: django_user_model.objects.create_user(name, password="x") for name in ("alice", "bob")}


async def connected(user) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(NotificationConsumer.as_asgi(), "/ws/notifications/")
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    return communicator


@sync_to_async
def alert_for(user):
    alert = open_alert(owner=user)
    dispatch_event(alert.events.get().pk)  # delivers the in-app notification after commit
    return alert


async def test_an_anonymous_visitor_is_refused():
    from django.contrib.auth.models import AnonymousUser

    communicator = WebsocketCommunicator(NotificationConsumer.as_asgi(), "/ws/notifications/")
    communicator.scope["user"] = AnonymousUser()
    connected, code = await communicator.connect()
    assert not connected and code == 4401
    await communicator.disconnect()


async def test_it_starts_with_the_unread_count(people):
    await alert_for(people["alice"])
    communicator = await connected(people["alice"])
    assert await communicator.receive_json_from() == {"type": "unread", "unread": 1}
    await communicator.disconnect()


async def test_the_badge_updates_when_a_notification_arrives(people):
    communicator = await connected(people["alice"])
    assert (await communicator.receive_json_from())["unread"] == 0
    alert = await alert_for(people["alice"])
    message = await communicator.receive_json_from(timeout=5)
    assert message["type"] == "notification" and message["unread"] == 1
    assert message["notification"]["alert"]["id"] == alert.pk
    assert message["notification"]["headline"] == alert.title
    await communicator.disconnect()


async def test_a_badge_left_open_for_a_while_still_hears_about_new_notifications(people):
    communicator = await connected(people["alice"])
    await communicator.receive_json_from()
    await asyncio.sleep(7)  # longer than the channel layer's 5 s blocking read
    await alert_for(people["alice"])
    assert (await communicator.receive_json_from(timeout=5))["unread"] == 1
    await communicator.disconnect()


async def test_someone_else_notification_does_not_reach_me(people):
    communicator = await connected(people["bob"])
    await communicator.receive_json_from()
    await alert_for(people["alice"])
    assert await communicator.receive_nothing(timeout=1)
    await communicator.disconnect()


async def test_reading_clears_the_badge(people):
    await alert_for(people["alice"])
    await alert_for(people["alice"])
    communicator = await connected(people["alice"])
    assert (await communicator.receive_json_from())["unread"] == 2
    await communicator.send_json_to({"type": "read", "ids": "all"})
    assert await communicator.receive_json_from() == {"type": "unread", "unread": 0}
    await communicator.disconnect()


@pytest.mark.parametrize(
    "frame",
    [
        '{"type": "delete"}',
        '{"type": "read", "ids": []}',
        '{"type": "read", "ids": ["1"]}',
        "not json",
        "[1, 2]",
        "[" * 100_000 + "]" * 100_000,
        '{"type": "read", "ids": ' + "[" * 500 + "]" * 500 + "}",
    ],
    ids=["unknown type", "no ids", "text ids", "not json", "a list", "deep nesting", "nested ids"],
)
async def test_a_bad_message_gets_an_error_and_the_connection_stays(people, frame):
    communicator = await connected(people["alice"])
    await communicator.receive_json_from()
    await communicator.send_to(text_data=frame)
    reply = await communicator.receive_json_from()
    assert reply["type"] == "error" and reply["detail"]
    await communicator.send_json_to({"type": "read", "ids": "all"})
    assert (await communicator.receive_json_from())["type"] == "unread"
    await communicator.disconnect()
