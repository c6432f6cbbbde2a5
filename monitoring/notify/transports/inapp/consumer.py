"""/ws/notifications/: a logged-in person's live notification badge."""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.utils import timezone

from fleet.websocket import EventLoopDispatch, JsonTextFrames
from monitoring.notify.choices import TransportKind
from monitoring.notify.models import Notification
from monitoring.notify.transports.inapp.groups import notifications_group
from monitoring.notify.transports.inapp.live import unread_count

NOT_LOGGED_IN = 4401


@database_sync_to_async
def count_unread(user_id: int) -> int:
    return unread_count(user_id)


@database_sync_to_async
def mark_read(user_id: int, ids: list[int] | None) -> int:
    rows = Notification.objects.filter(user_id=user_id, transport=TransportKind.IN_APP, read_at=None)
    if ids is not None:
        rows = rows.filter(pk__in=ids)
    rows.update(read_at=timezone.now())
    return unread_count(user_id)


class NotificationConsumer(EventLoopDispatch, JsonTextFrames, AsyncJsonWebsocketConsumer):
    """Sends the unread count on connect, then each new notification; accepts `read` messages."""

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=NOT_LOGGED_IN)
            return
        self.user_id = user.pk
        self.group = notifications_group(user.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json({"type": "unread", "unread": await count_unread(self.user_id)})

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        if not isinstance(content, dict) or content.get("type") != "read":
            await self.send_error('Send {"type": "read", "ids": [notification ids]} or {"type": "read", "ids": "all"}.')
            return
        ids = content.get("ids")
        if ids != "all" and not (isinstance(ids, list) and ids and all(type(i) is int and i > 0 for i in ids)):
            await self.send_error('"ids" must be "all" or a non-empty list of notification ids.')
            return
        unread = await mark_read(self.user_id, None if ids == "all" else ids)
        await self.send_json({"type": "unread", "unread": unread})

    async def notification_created(self, message):
        await self.send_json(
            {"type": "notification", "unread": message["unread"], "notification": message["notification"]}
        )

    async def unread_changed(self, message):
        await self.send_json({"type": "unread", "unread": message["unread"]})
