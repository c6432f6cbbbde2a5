"""The notification badge's starting count on every page (the websocket keeps it current)."""

from monitoring.notify.transports.inapp.live import unread_count


def notifications(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"unread_notifications": unread_count(user.pk)}
