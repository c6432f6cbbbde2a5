"""Admin for notifications, preferences, webhooks and how far each digest channel was told of underused GPUs."""

from django.contrib import admin
from django.db import models

from monitoring.notify.models import Notification, NotificationPreference, UnderusedReported, Webhook


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "url", "active", "created"]
    list_filter = ["active"]
    search_fields = ["name", "url", "user__username"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}


@admin.register(NotificationPreference)
class NotificationPreferenceAdmin(admin.ModelAdmin):
    list_display = ["user", "email", "email_min_severity", "webhooks", "resolved"]
    search_fields = ["user__username"]


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ["event", "user", "transport", "status", "attempts", "created", "sent_at", "read_at"]
    list_filter = ["transport", "status"]
    search_fields = ["user__username", "error", "event__alert__title"]
    readonly_fields = [f.name for f in Notification._meta.fields]
    list_select_related = ["event__alert", "user"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(UnderusedReported)
class UnderusedReportedAdmin(admin.ModelAdmin):
    list_display = ["user", "transport", "webhook", "until", "attempts", "error"]
    list_filter = ["transport"]
    search_fields = ["user__username", "error"]
    readonly_fields = [f.name for f in UnderusedReported._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
