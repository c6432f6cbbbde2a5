"""What every transport shares: the notification it delivers."""


class Transport:
    """Delivers one notification; subclasses implement notify(alert)."""

    def __init__(self, notification):
        self.notification = notification
        self.event = notification.event
        self.user = notification.user

    def notify(self, alert) -> None:
        raise NotImplementedError
