"""Email through Django's mail backend (SMTP in production, the console in the demo)."""

from django.conf import settings
from django.core.mail import send_mail

from monitoring.notify.messages import body, headline, others_of
from monitoring.notify.transports.base import Transport, TransportError


class EmailTransport(Transport):
    def notify(self, alert) -> None:
        if not self.user.email:
            raise TransportError(f"{self.user} has no email address", permanent=True)
        others = others_of(self.notification)
        try:
            send_mail(
                f"[GPU Fleet] {headline(self.event, len(others))}",
                body(self.event, others),
                settings.DEFAULT_FROM_EMAIL,
                [self.user.email],
            )
        except OSError as exc:  # SMTP errors are OSErrors: the mail server may be back later
            raise TransportError(f"mail server: {exc}") from exc
