"""The form of a person's alert preferences (each transport with destinations has its own form in its folder)."""

import zoneinfo

from django import forms

from monitoring.notify.models import NotificationPreference


def zone_choices() -> list[tuple[str, str]]:
    return [(name, name) for name in sorted(zoneinfo.available_timezones())]


def quiet_hours_error(start, end) -> str | None:
    if (start is None) != (end is None):
        return "Give both ends of the quiet hours (or neither)."
    if start is not None and start == end:
        return "Quiet hours must end at another time than they start."
    return None


class PreferenceForm(forms.ModelForm):
    time_zone = forms.ChoiceField(choices=zone_choices, label="My time zone")

    class Meta:
        model = NotificationPreference
        fields = [
            "email",
            "email_min_severity",
            "email_delivery",
            "webhooks",
            "webhook_delivery",
            "resolved",
            "quiet_start",
            "quiet_end",
            "time_zone",
        ]
        labels = {
            "email": "Email me alerts",
            "email_min_severity": "Email only alerts of at least",
            "email_delivery": "Send emails",
            "webhooks": "Post alerts to my webhooks",
            "webhook_delivery": "Post to webhooks",
            "resolved": "Also email and post when an alert resolves",
            "quiet_start": "Quiet hours from (HH:MM)",
            "quiet_end": "until (HH:MM)",
        }

    KEPT_WHEN_LEFT_OUT = ("email_delivery", "webhook_delivery", "time_zone")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in self.KEPT_WHEN_LEFT_OUT:
            self.fields[name].required = False

    def clean(self):
        data = super().clean()
        for name in self.KEPT_WHEN_LEFT_OUT:
            data[name] = data.get(name) or getattr(self.instance, name)
        error = quiet_hours_error(data.get("quiet_start"), data.get("quiet_end"))
        if error:
            raise forms.ValidationError(error, code="quiet_hours")
        return data


class DestinationForm(forms.ModelForm):
    """Adds one of a person's destinations (a webhook) on the alert settings page, which shows the form with
    `about`, the person's own in `columns` (field → heading) or `empty` when there are none, and `added`
    once one is."""

    about = ""
    columns = {"name": "Name"}
    empty = ""
    added = ""
