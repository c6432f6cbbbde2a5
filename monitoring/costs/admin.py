"""Admin for measured GPU usage (read-only) and researchers' monthly budgets."""

from django.contrib import admin

from monitoring.costs.models import UsageHour, UserBudget


@admin.register(UsageHour)
class UsageHourAdmin(admin.ModelAdmin):
    list_display = ["bucket", "gpu", "os_user", "user", "project", "gpu_seconds", "idle_seconds", "rate", "cost"]
    list_filter = ["project", "gpu__model"]
    search_fields = ["os_user", "user__username"]
    date_hierarchy = "bucket"
    readonly_fields = [f.name for f in UsageHour._meta.fields]
    list_select_related = ["gpu__node", "user", "project"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(UserBudget)
class UserBudgetAdmin(admin.ModelAdmin):
    list_display = ["user", "monthly_budget"]
    search_fields = ["user__username"]
