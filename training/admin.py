"""Runs, their shares, progress and logs, and sweeps in Django's admin."""

from django.contrib import admin

from training.models import Run, RunNode, Sweep


class RunNodeInline(admin.TabularInline):
    model = RunNode
    fields = ["rank", "node", "gpu_indexes", "status", "pid", "worker", "heartbeat_at", "exit_code"]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["__str__", "owner", "project", "workload", "strategy", "status", "created", "finished_at"]
    list_filter = ["status", "strategy", "workload", "project"]
    search_fields = ["name", "owner__username", "workload", "script"]
    list_select_related = ["owner", "project"]
    readonly_fields = ["status", "started_at", "first_step_at", "finished_at", "heartbeat_at", "exit_code", "error"]
    raw_id_fields = ["sweep", "cancelled_by"]
    filter_horizontal = ["gpus"]
    inlines = [RunNodeInline]


@admin.register(Sweep)
class SweepAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "project", "workload", "mode", "metric", "created"]
    list_filter = ["mode", "metric", "workload"]
    search_fields = ["name", "owner__username"]
