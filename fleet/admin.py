from django import forms
from django.contrib import admin

from fleet.api_tokens import EXPIRY_CHOICES, issue, revoke
from fleet.models import (
    GPU,
    ApiToken,
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
from monitoring.health.views import start as start_burn_ins


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
    actions = ["burn_in_nodes"]

    @admin.action(description="Burn in every GPU of the selected nodes")
    def burn_in_nodes(self, request, queryset):
        start_burn_ins(request, GPU.objects.filter(node__in=queryset).select_related("node"))


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
    actions = ["burn_in_gpus"]

    @admin.action(description="Burn in the selected GPUs")
    def burn_in_gpus(self, request, queryset):
        start_burn_ins(request, queryset.select_related("node"))


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
