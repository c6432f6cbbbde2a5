"""Email through Django's mail backend (SMTP in production, the console in the demo)."""

from django.conf import settings
from django.core.mail import send_mail

from monitoring.alerts.choices import AlertSeverity
from monitoring.notify import digests
from monitoring.notify.messages import body, headline, others_of
from monitoring.notify.transports.base import Transport, TransportError


class EmailTransport(Transport):
    delivery_field = "email_delivery"

    @classmethod
    def reaches(cls, prefs) -> list:
        return [None] if prefs.email and prefs.user.email else []

    @classmethod
    def wants(cls, event, prefs) -> bool:
        alert = event.alert
        emailed_elsewhere = alert.details.get("emailed", False)  # e.g. booking notices the watcher emailed
        severe_enough = AlertSeverity(alert.severity).rank >= AlertSeverity(prefs.email_min_severity).rank
        return severe_enough and not emailed_elsewhere

    def notify(self, alert) -> None:
        others = others_of(self.notification)
        self.send(f"[GPU Fleet] {headline(self.event, len(others))}", body(self.event, others))

    def notify_digest(self, digest: digests.Digest) -> None:
        self.send(f"[GPU Fleet] {digest.subject}", digests.body(digest))

    def send(self, subject: str, text: str) -> None:
        if not self.user.email:
            raise TransportError(f"{self.user} has no email address", permanent=True)
        try:
            send_mail(subject, text, settings.DEFAULT_FROM_EMAIL, [self.user.email])
        except OSError as exc:  # SMTP errors are OSErrors: the mail server may be back later
            raise TransportError(f"mail server: {exc}") from exc
