"""API tokens in Django's admin: made for a user (the key shown once), listed and revoked."""

from django import forms
from django.contrib import admin

from accounts.models import ApiToken
from accounts.tokens import EXPIRY_CHOICES, issue, revoke


class ApiTokenForm(forms.ModelForm):
    """Makes a token for a user; its key is generated, shown once, and only its hash is kept."""

    expires_in_days = forms.TypedChoiceField(
        label="Expires after",
        choices=[("" if days is None else str(days), label) for days, label in EXPIRY_CHOICES],
        coerce=int,
        empty_value=None,
        required=False,
    )

    class Meta:
        model = ApiToken
        fields = ["user", "name"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "created", "last_used_at", "expires_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter), ("expires_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "user__username"]
    list_select_related = ["user"]
    readonly_fields = ["user", "prefix", "created", "last_used_at", "revoked_at"]
    fields = ["user", "name", "prefix", "created", "expires_at", "last_used_at", "revoked_at"]
    actions = ["revoke_tokens"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = ApiTokenForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request, obj=None):
        return ["user", "name", "expires_in_days"] if obj is None else self.fields

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        token, key = issue(form.cleaned_data["user"], form.cleaned_data["name"], form.cleaned_data["expires_in_days"])
        obj.pk = token.pk
        self.message_user(request, f"Token {token.name} of {token.user}: {key} (copy it now: it is not shown again).")

    @admin.action(description="Revoke the selected tokens")
    def revoke_tokens(self, request, queryset):
        done = sum(revoke(token) for token in queryset)
        self.message_user(request, f"{done} token(s) revoked.")
