"""Forms of the alert pages."""

from django import forms

SNOOZE_CHOICES = [(60, "1 hour"), (240, "4 hours"), (1440, "1 day"), (10080, "7 days")]


class SnoozeForm(forms.Form):
    minutes = forms.TypedChoiceField(choices=SNOOZE_CHOICES, coerce=int, label="Snooze for")
