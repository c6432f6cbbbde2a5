"""Admin view of the rollups' progress, with the last error a run wrote back."""

from django.contrib import admin

from monitoring.ingest.admin import ReadOnlyAdmin
from monitoring.models import RollupProgress


@admin.register(RollupProgress)
class RollupProgressAdmin(ReadOnlyAdmin):
    list_display = ["table", "done_until", "late_since", "last_run_at", "last_error"]
