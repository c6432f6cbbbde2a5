from django.contrib import admin

from fleet.models import (
    GPU,
    CalendarFeed,
    DeadlineWindow,
    GPUModel,
    Node,
    OsAccount,
    Project,
    QuotaPolicy,
    Reservation,
    ReservationEvent,
    UserBudget,
)


@admin.register(GPUModel)
class GPUModelAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "memory_gib",
        "memory_bandwidth_gb_s",
        "fp32_tflops",
        "bf16_tflops",
        "tdp_w",
        "cost_per_gpu_hour",
    ]
    list_filter = ["memory_gib", "interconnect"]
    search_fields = ["name", "nvml_names", "interconnect"]


class GPUInline(admin.TabularInline):
    model = GPU
    fields = ["index", "uuid", "model", "memory_total_mib", "pcie_gen", "pcie_width", "mig"]
    extra = 0


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = [
        "hostname",
        "status",
        "last_seen",
        "driver_version",
        "cuda_version",
        "agent_version",
        "token_created",
    ]
    list_filter = ["status", "driver_version", "cuda_version"]
    search_fields = ["hostname", "labels"]
    readonly_fields = ["token_created", "last_seen", "boot_id"]
    inlines = [GPUInline]


@admin.register(GPU)
class GPUAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "uuid",
        "model",
        "memory_total_mib",
        "util_gpu",
        "mem_used_mib",
        "temp_c",
        "last_sample_at",
    ]
    list_filter = ["model", "node", "mig", "pcie_gen"]
    search_fields = ["uuid", "name", "node__hostname"]
    list_select_related = ["node", "model"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "monthly_budget"]
    search_fields = ["name", "description", "members__username"]
    list_filter = ["members"]
    filter_horizontal = ["members"]


@admin.register(OsAccount)
class OsAccountAdmin(admin.ModelAdmin):
    list_display = ["username", "user"]
    search_fields = ["username", "user__username", "user__email"]
    list_filter = ["user"]


@admin.register(UserBudget)
class UserBudgetAdmin(admin.ModelAdmin):
    list_display = ["user", "monthly_budget"]
    search_fields = ["user__username"]


@admin.register(Reservation)
class ReservationAdmin(admin.ModelAdmin):
    list_display = ["gpu", "user", "project", "start", "end", "status", "first_used_at", "deadline_name"]
    list_filter = ["status", "project", "gpu__model", "gpu__node"]
    search_fields = ["user__username", "purpose", "deadline_name", "gpu__node__hostname", "gpu__uuid"]
    list_select_related = ["gpu__node", "user", "project"]
    date_hierarchy = "start"
    raw_id_fields = ["gpu", "user", "changed_by"]
    readonly_fields = ["booking", "first_used_at", "created", "status_changed"]


@admin.register(QuotaPolicy)
class QuotaPolicyAdmin(admin.ModelAdmin):
    list_display = ["__str__", "user_gpu_hours_per_week", "project_gpu_hours_per_week", "longest_booking_hours"]

    def has_add_permission(self, request):
        return not QuotaPolicy.objects.exists()

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(DeadlineWindow)
class DeadlineWindowAdmin(admin.ModelAdmin):
    list_display = ["name", "deadline", "window_days", "user_gpu_hours_per_week", "longest_booking_hours"]
    search_fields = ["name"]
    list_filter = ["deadline"]


@admin.register(ReservationEvent)
class ReservationEventAdmin(admin.ModelAdmin):
    list_display = ["created", "kind", "user", "actor", "detail", "emailed_at", "processed"]
    list_filter = ["kind", "created"]
    search_fields = ["detail", "user__username", "os_user"]
    list_select_related = ["user", "actor"]
    raw_id_fields = ["reservation", "user", "actor"]


@admin.register(CalendarFeed)
class CalendarFeedAdmin(admin.ModelAdmin):
    list_display = ["user", "created"]
    search_fields = ["user__username"]
    readonly_fields = ["token_hash", "created"]
