"""What every transport shares: the notification it delivers, how it fails, and what it says about itself."""


class TransportError(Exception):
    """Delivery failed; `permanent` when retrying cannot help (e.g. the endpoint answered 404)."""

    def __init__(self, message: str, permanent: bool = False):
        super().__init__(message)
        self.message = message
        self.permanent = permanent


class Transport:
    """Delivers one notification; subclasses implement notify(alert).

    The class also answers for its kind, so that nothing outside its folder asks which transport it is:
    whom it reaches (`reaches`, `wants`), when its messages go out (`delivery_field`, a
    NotificationPreference field; None: at once), and whether it is told even what a person muted
    (`always`). A transport with destinations (registered with their model) names the form that adds one
    on the alert settings page (`form`, a DestinationForm), its API viewset (`viewset`) and its admin
    (`admin`).
    """

    always = False
    delivery_field: str | None = None
    form = None
    viewset = None
    admin = None

    def __init__(self, notification):
        self.notification = notification
        self.event = notification.event if notification.event_id else None
        self.user = notification.user

    @classmethod
    def reaches(cls, prefs) -> list:
        """Where the person takes this transport: their destinations, [None] for the transport itself, or []."""
        return []

    @classmethod
    def wants(cls, event, prefs) -> bool:
        """Whether this event goes to the person through this transport at all."""
        return True

    def notify(self, alert) -> None:
        raise NotImplementedError

    def notify_digest(self, digest) -> None:
        """A digest (monitoring/notify/digests.py): held notifications of one person and channel, and their
        underused GPUs, as one message."""
        raise TransportError(f"{type(self).__name__} sends no digests", permanent=True)
