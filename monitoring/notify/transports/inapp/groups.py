"""Channel-layer group names for the notification center."""


def notifications_group(user_id: int) -> str:
    return f"notifications.user.{user_id}"
