"""The inventory in Django's admin: GPU models, nodes and their GPUs, projects, OS accounts."""

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from inventory.models import GPU, GPUModel, Node, OsAccount, Project
from inventory.nodes import agent_install_lines, give_token, rotate_token


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
    change_form_template = "admin/fleet/node/change_form.html"
    # A new node is its name (the agent's hello fills in the rest); its GPUs come with that hello too.
    add_fields = ["hostname", "labels", "cost_per_gpu_hour"]

    def get_fields(self, request, obj=None):
        return self.add_fields if obj is None else super().get_fields(request, obj)

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else []

    def save_model(self, request, obj, form, change):
        if not change:
            request.node_token = give_token(obj)  # shown once by response_add, stored only hashed
        super().save_model(request, obj, form, change)

    def response_add(self, request, obj, post_url_continue=None):
        return self.token_page(request, obj, request.node_token, "added")

    def get_urls(self):
        rotate = path(
            "<path:object_id>/rotate-token/",
            self.admin_site.admin_view(self.rotate_token_view),
            name="fleet_node_rotate_token",
        )
        return [rotate, *super().get_urls()]

    def rotate_token_view(self, request, object_id):
        """GET asks to confirm; POST issues the new token and shows it once (the old one stops at once)."""
        node = get_object_or_404(Node, pk=object_id)
        if not self.has_change_permission(request, node):
            raise PermissionDenied
        if request.method != "POST":
            context = {**self.admin_site.each_context(request), "node": node, "opts": self.opts}
            context["title"] = f"Rotate the agent token of {node.hostname}"
            return TemplateResponse(request, "admin/fleet/node/rotate_token.html", context)
        token = rotate_token(node.hostname)
        self.log_change(request, node, "Rotated its agent token.")
        return self.token_page(request, node, token, "rotated")

    def token_page(self, request, node: Node, token: str, done: str) -> TemplateResponse:
        """The token, once: the response to the POST that made it, never stored in clear or in the session."""
        scheme = "wss" if request.is_secure() else "ws"
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Agent token for {node.hostname}",
            "node": node,
            "token": token,
            "done": done,
            "install": "\n".join(agent_install_lines(token, f"{scheme}://{request.get_host()}")),
            "change_url": reverse("admin:fleet_node_change", args=[node.pk]),
        }
        response = TemplateResponse(request, "admin/fleet/node/token.html", context)
        response["Cache-Control"] = "no-store"
        return response


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
