"""The inventory in Django's admin: GPU models, nodes and their GPUs, projects, OS accounts."""

from django.contrib import admin

from inventory.models import GPU, GPUModel, Node, OsAccount, Project


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
    # Features above the inventory add their actions here (monitoring/health/admin.py: burn-ins).
    actions: list = []


@admin.register(GPU)
class GPUAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "uuid",
        "model",
        "memory_total_mib",
    ]
    list_filter = ["model", "node", "mig", "pcie_gen"]
    search_fields = ["uuid", "name", "node__hostname"]
    list_select_related = ["node", "model"]
    # Features above the inventory add their columns and actions here (monitoring/storage/admin.py: the latest
    # state; monitoring/health/admin.py: burn-ins).
    actions: list = []


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
