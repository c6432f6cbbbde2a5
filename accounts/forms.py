"""The form that makes an API token on the tokens page."""

from django import forms

from accounts.tokens import EXPIRY_CHOICES


class NewTokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What uses it, e.g. “laptop” or “CI pipeline”.")
    expires = forms.TypedChoiceField(
        label="Expires after",
        choices=[("" if days is None else str(days), label) for days, label in EXPIRY_CHOICES],
        coerce=int,
        empty_value=None,
        required=False,
        initial="90",
    )
