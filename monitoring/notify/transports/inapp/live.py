"""Live badge updates: after commit, tell a person's open pages about a new notification or a new unread count."""

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from monitoring.notify.choices import TransportKind
from monitoring.notify.models import Notification
from monitoring.notify.transports.inapp.groups import notifications_group


def unread_count(user_id: int) -> int:
    return Notification.objects.filter(user_id=user_id, transport=TransportKind.IN_APP, read_at=None).count()


def send(user_id: int, message: dict) -> None:
    async_to_sync(get_channel_layer().group_send)(notifications_group(user_id), message)


def broadcast_notification(notification: Notification) -> None:
    from monitoring.notify.serializers import NotificationSerializer

    data = NotificationSerializer(notification).data
    user_id = notification.user_id
    transaction.on_commit(
        lambda: send(user_id, {"type": "notification.created", "notification": data, "unread": unread_count(user_id)})
    )


def broadcast_unread(user_id: int) -> None:
    transaction.on_commit(lambda: send(user_id, {"type": "unread.changed", "unread": unread_count(user_id)}))
