"""What every transport shares: the notification it delivers, and how it fails."""


class TransportError(Exception):
    """Delivery failed; `permanent` when retrying cannot help (e.g. the endpoint answered 404)."""

    def __init__(self, message: str, permanent: bool = False):
        super().__init__(message)
        self.message = message
        self.permanent = permanent


class Transport:
    """Delivers one notification; subclasses implement notify(alert)."""

    def __init__(self, notification):
        self.notification = notification
        self.event = notification.event if notification.event_id else None
        self.user = notification.user

    def notify(self, alert) -> None:
        raise NotImplementedError

    def notify_digest(self, digest) -> None:
        """A digest (monitoring/notify/digests.py): held notifications of one person and channel, and their
        underused GPUs, as one message."""
        raise TransportError(f"{type(self).__name__} sends no digests", permanent=True)
