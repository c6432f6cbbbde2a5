"""Forms for a person's alert preferences and webhooks."""

from django import forms

from monitoring.notify.models import NotificationPreference, Webhook


class PreferenceForm(forms.ModelForm):
    class Meta:
        model = NotificationPreference
        fields = ["email", "email_min_severity", "webhooks", "resolved"]
        labels = {
            "email": "Email me alerts",
            "email_min_severity": "Email only alerts of at least",
            "webhooks": "Post alerts to my webhooks",
            "resolved": "Also email and post when an alert resolves",
        }


class WebhookForm(forms.ModelForm):
    url = forms.URLField(max_length=500, assume_scheme="https", label="URL (http:// or https://)")

    class Meta:
        model = Webhook
        fields = ["name", "url"]
