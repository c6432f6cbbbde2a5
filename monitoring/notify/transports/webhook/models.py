"""A person's webhooks: where the webhook transport posts their alerts."""

from django.conf import settings
from django.core.validators import URLValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from monitoring.notify.transports.webhook import signing
from monitoring.notify.transports.webhook.targets import validate_public_url


def new_webhook_secret() -> str:
    return signing.new_secret()


class Webhook(models.Model):
    """An HTTP endpoint that receives a person's alerts as signed JSON (Slack-compatible `text`)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks")
    name = models.CharField(max_length=100)
    url = models.URLField(
        max_length=500,
        validators=[
            URLValidator(schemes=["http", "https"], message="Enter an http:// or https:// URL."),
            validate_public_url,
        ],
    )
    secret = models.CharField(
        max_length=100,
        default=new_webhook_secret,
        help_text="Signs each delivery (Standard Webhooks, HMAC-SHA256); keep it private.",
    )
    active = models.BooleanField(default=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(url__startswith="http://") | Q(url__startswith="https://"), name="webhook_url_is_http"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} → {self.url}"
