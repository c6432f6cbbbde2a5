"""Admin views of the ingest's bookkeeping: read-only, since only the ingest writes them."""

from django.contrib import admin

from monitoring.ingest.models import AgentSession, NodeStatusChange, SecurityEvent


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdmin):
    list_display = ["node", "session", "boot_id", "last_seq", "connected_at"]
    search_fields = ["node__hostname", "session", "boot_id"]


@admin.register(NodeStatusChange)
class NodeStatusChangeAdmin(ReadOnlyAdmin):
    list_display = ["created", "node", "old_status", "new_status", "reason"]
    list_filter = ["new_status", "node"]
    search_fields = ["node__hostname", "reason"]
    date_hierarchy = "created"


@admin.register(SecurityEvent)
class SecurityEventAdmin(ReadOnlyAdmin):
    """Hellos refused for listing another node's GPU, and GPUs moved between nodes by an admin."""

    list_display = ["created", "node", "kind", "gpu_uuid", "detail"]
    list_filter = ["kind", "node"]
    search_fields = ["node__hostname", "gpu_uuid", "detail"]
    date_hierarchy = "created"
