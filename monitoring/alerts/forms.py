"""Forms of the alert pages."""

import re
from datetime import timedelta

from django import forms
from django.contrib.auth import get_user_model

from inventory.models import Node
from monitoring.alerts import silences
from monitoring.alerts.choices import AlertKind

SNOOZE_CHOICES = [(60, "1 hour"), (240, "4 hours"), (1440, "1 day"), (10080, "7 days")]


class SnoozeForm(forms.Form):
    minutes = forms.TypedChoiceField(choices=SNOOZE_CHOICES, coerce=int, label="Snooze for")


DURATION = re.compile(r"^\s*(\d{1,6})\s*([mhd])\s*$")
UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def parse_duration(text: str) -> timedelta:
    """ "90m", "2h", "3d" → a timedelta; ValidationError naming the form otherwise, or a period out of range."""
    match = DURATION.match(text or "")
    if not match:
        raise forms.ValidationError('Give a duration such as "90m", "2h" or "3d".', code="format")
    duration = timedelta(**{UNITS[match[2]]: int(match[1])})
    if not silences.MIN_DURATION <= duration <= silences.MAX_DURATION:
        raise forms.ValidationError("Silence for between 1 minute and 30 days.", code="range")
    return duration


class SilenceForm(forms.Form):
    node = forms.ModelChoiceField(queryset=Node.objects.order_by("hostname"), required=False, empty_label="Any node")
    user = forms.ModelChoiceField(
        queryset=get_user_model().objects.filter(is_active=True).order_by("username"),
        required=False,
        empty_label="Anyone",
        label="Owner",
    )
    kind = forms.ChoiceField(choices=[("", "Every rule"), *AlertKind.choices], required=False, label="Rule")
    duration = forms.CharField(max_length=20, label="For", help_text='e.g. "90m", "2h", "3d" (at most 30 days)')
    reason = forms.CharField(max_length=200, label="Reason")

    def clean_duration(self) -> timedelta:
        return parse_duration(self.cleaned_data["duration"])

    def clean(self):
        data = super().clean()
        if not (data.get("node") or data.get("user") or data.get("kind")):
            raise forms.ValidationError("Silence by node, owner or rule (at least one).", code="no_matcher")
        return data
