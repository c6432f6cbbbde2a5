"""Adding a webhook on the alert settings page, and what that page says about webhooks."""

from django import forms
from django.utils.safestring import mark_safe

from monitoring.notify.forms import DestinationForm
from monitoring.notify.transports.webhook.models import Webhook


class WebhookForm(DestinationForm):
    """A webhook's name and URL; its secret is made for it."""

    url = forms.URLField(max_length=500, assume_scheme="https", label="URL (http:// or https://)")

    about = mark_safe(
        "Alerts are POSTed as JSON with a Slack-compatible <code>text</code>, signed the Standard Webhooks way "
        "(<code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code>); failures are "
        "retried with backoff. Only public addresses are reached."
    )
    columns = {"name": "Name", "url": "URL", "secret": "Signing secret"}
    empty = "No webhooks yet. A Slack incoming-webhook URL works as is."
    added = "Its signing secret is shown below."

    class Meta:
        model = Webhook
        fields = ["name", "url"]
