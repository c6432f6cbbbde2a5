"""In-app: the notification row is the message; tell the person's open pages so the badge updates live."""

from monitoring.notify.transports.base import Transport
from monitoring.notify.transports.inapp.live import broadcast_notification


class InAppTransport(Transport):
    always = True  # the notification center shows even what a person chose not to be emailed about

    @classmethod
    def reaches(cls, prefs) -> list:
        return [None]

    def notify(self, alert) -> None:
        broadcast_notification(self.notification)
