"""Admin for notifications, preferences, each transport's destinations and how far each digest channel was
told of underused GPUs."""

from django.contrib import admin

from monitoring.notify.models import Notification, NotificationPreference, UnderusedReported
from monitoring.notify.transports import destination_kinds, destination_model, transport_class

for kind in destination_kinds():  # a transport's destinations (webhooks) with the admin its folder gives
    admin.site.register(destination_model(kind), transport_class(kind).admin)


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
    list_display = ["user", "transport", *destination_kinds(), "until", "attempts", "error"]
    list_filter = ["transport"]
    search_fields = ["user__username", "error"]
    readonly_fields = [f.name for f in UnderusedReported._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
