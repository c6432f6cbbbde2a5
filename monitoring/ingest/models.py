"""The ingest's own records: where each node's agent resumes, what an agent did that admins must see, and when a
node went online or offline."""

from django.contrib.postgres.fields import ArrayField
from django.db import models

from inventory.choices import NodeStatus
from inventory.models import Node
from monitoring.ingest.choices import SecurityEventKind


class AgentSession(models.Model):
    """A node's current agent start and the seq up to which all its frames are stored, so a reconnect resumes there."""

    node = models.OneToOneField(Node, on_delete=models.CASCADE, related_name="agent_session")
    session = models.CharField(max_length=64, blank=True, help_text="The agent start's id from its hello.")
    boot_id = models.CharField(max_length=64, blank=True)
    last_seq = models.PositiveBigIntegerField(
        default=0, help_text="Every frame of this session with a seq up to this one is stored (or refused for good)."
    )
    ahead = ArrayField(
        models.BigIntegerField(), default=list, blank=True, help_text="Seqs stored above last_seq, past a gap."
    )
    connection = models.CharField(max_length=32, blank=True, help_text="The newest connection; older ones close.")
    connected_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.node_id}: {self.session or self.boot_id} up to seq {self.last_seq}"


class SecurityEvent(models.Model):
    """Something a node's agent did that an admin must see (a claim on another node's GPU), or an admin's move."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="security_events")
    kind = models.CharField(max_length=16, choices=SecurityEventKind.choices)
    gpu_uuid = models.CharField(max_length=96, blank=True)
    detail = models.CharField(max_length=500)
    created = models.DateTimeField()

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["-created"], name="securityevent_created")]

    def __str__(self) -> str:
        return f"{self.created:%Y-%m-%d %H:%M} {self.node_id}: {self.get_kind_display()}"


class NodeStatusChange(models.Model):
    """A node going online or offline, with why; the ingest writes one in the transaction that flips it."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="status_changes")
    old_status = models.CharField(max_length=16, choices=NodeStatus.choices)
    new_status = models.CharField(max_length=16, choices=NodeStatus.choices)
    reason = models.CharField(max_length=200)
    created = models.DateTimeField()

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["node", "-created"], name="nodestatuschange_node_created")]

    def __str__(self) -> str:
        return f"{self.node_id}: {self.old_status} → {self.new_status}"
