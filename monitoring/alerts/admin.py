"""Admin for alerts, idle-process policies, idle stretches, reclaim exemptions and reclaims."""

from django.contrib import admin

from monitoring.alerts.models import Alert, AlertEvent, IdlePolicy, IdleStretch, Reclaim, ReclaimExemption


class AlertEventInline(admin.TabularInline):
    model = AlertEvent
    fields = ["created", "kind", "old_status", "new_status", "reason", "actor", "processed"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    list_display = [
        "title",
        "kind",
        "severity",
        "status",
        "owner",
        "project",
        "opened_at",
        "escalated_at",
        "resolved_at",
    ]
    list_filter = ["kind", "severity", "status", "project"]
    search_fields = ["title", "message", "key", "owner__username"]
    readonly_fields = ["key", "kind", "opened_at", "last_seen_at", "resolved_at", "escalated_at", "stage", "details"]
    list_select_related = ["owner", "project"]
    inlines = [AlertEventInline]


@admin.register(IdlePolicy)
class IdlePolicyAdmin(admin.ModelAdmin):
    list_display = ["project", "min_memory_mib", "max_util_pct", "window_minutes", "reclaim", "reclaim_grace_s"]
    list_filter = ["reclaim"]
    search_fields = ["project__name"]


@admin.register(IdleStretch)
class IdleStretchAdmin(admin.ModelAdmin):
    list_display = ["name", "pid", "kind", "owner", "gpu", "began", "until", "rate"]
    list_filter = ["kind"]
    search_fields = ["name", "os_user", "owner__username", "key"]
    readonly_fields = [f.name for f in IdleStretch._meta.fields]
    list_select_related = ["owner", "gpu__node"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ReclaimExemption)
class ReclaimExemptionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "reason", "created_by", "created"]
    search_fields = ["user__username", "node__hostname", "reason"]
    readonly_fields = ["created_by", "created"]

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


@admin.register(Reclaim)
class ReclaimAdmin(admin.ModelAdmin):
    list_display = ["pid", "os_user", "owner", "node", "status", "requested_at", "signalled_at", "finished_at"]
    list_filter = ["status", "node"]
    search_fields = ["os_user", "cmdline", "owner__username"]
    readonly_fields = [f.name for f in Reclaim._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
