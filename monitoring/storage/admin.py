"""Admin views of telemetry: the rollups' progress (with the last error a run wrote back), each GPU's latest state."""

from django.contrib import admin

from inventory.admin import GPUAdmin
from monitoring.ingest.admin import ReadOnlyAdmin
from monitoring.storage.models import RollupProgress


@admin.register(RollupProgress)
class RollupProgressAdmin(ReadOnlyAdmin):
    list_display = ["table", "done_until", "late_since", "last_run_at", "last_error"]


# The inventory's GPU list shows what telemetry last heard from each GPU.
GPUAdmin.list_display = [
    *GPUAdmin.list_display,
    "state__util_gpu",
    "state__mem_used_mib",
    "state__temp_c",
    "state__last_sample_at",
]
GPUAdmin.list_select_related = [*GPUAdmin.list_select_related, "state"]
