"""The admin of webhooks (registered with the other destinations by monitoring/notify/admin.py)."""

from django.contrib import admin
from django.db import models


class WebhookAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "url", "active", "created"]
    list_filter = ["active"]
    search_fields = ["name", "url", "user__username"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
