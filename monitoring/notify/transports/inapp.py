"""In-app: the notification row is the message; tell the person's open pages so the badge updates live."""

from monitoring.notify.live import broadcast_notification
from monitoring.notify.transports.base import Transport


class InAppTransport(Transport):
    def notify(self, alert) -> None:
        broadcast_notification(self.notification)
