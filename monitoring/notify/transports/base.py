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
        self.event = notification.event
        self.user = notification.user

    def notify(self, alert) -> None:
        raise NotImplementedError

    def notify_digest(self, notifications: list, why: str) -> None:
        """Several held notifications of one person and channel as one message; `why` names the digest."""
        raise TransportError(f"{type(self).__name__} sends no digests", permanent=True)
