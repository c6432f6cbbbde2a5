"""Alerts and their state changes, idle-process policies per project, and reclaims of idle processes."""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from inventory.models import GPU, Node, Project
from monitoring.alerts.choices import (
    AlertEventKind,
    AlertSeverity,
    AlertStatus,
    IdleStretchKind,
    ReclaimStatus,
    alert_kinds,
)


class Alert(models.Model):
    """One alert condition: open while the condition holds, then kept as history."""

    kind = models.CharField(max_length=32, choices=alert_kinds)
    severity = models.CharField(max_length=16, choices=AlertSeverity.choices, default=AlertSeverity.WARNING)
    status = models.CharField(max_length=16, choices=AlertStatus.choices, default=AlertStatus.OPEN)
    key = models.CharField(max_length=200, help_text="Names the condition; one open alert per key.")
    title = models.CharField(max_length=200)
    message = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="alerts"
    )
    project = models.ForeignKey(Project, on_delete=models.SET_NULL, null=True, blank=True, related_name="alerts")
    node = models.ForeignKey(Node, on_delete=models.SET_NULL, null=True, blank=True, related_name="alerts")
    gpu = models.ForeignKey(GPU, on_delete=models.SET_NULL, null=True, blank=True, related_name="alerts")
    details = models.JSONField(default=dict, blank=True)
    opened_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now, help_text="When a rule last found the condition.")
    stage = models.PositiveSmallIntegerField(default=1, help_text="Warnings given so far (idle processes).")
    escalated_at = models.DateTimeField(null=True, blank=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="acknowledged_alerts",
    )
    snoozed_until = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-opened_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["key"], condition=~Q(status=AlertStatus.RESOLVED), name="alert_one_open_per_key"
            ),
            models.CheckConstraint(
                condition=Q(status=AlertStatus.RESOLVED, resolved_at__isnull=False)
                | (~Q(status=AlertStatus.RESOLVED) & Q(resolved_at__isnull=True)),
                name="alert_resolved_at_matches_status",
            ),
        ]
        indexes = [
            models.Index(fields=["kind", "status"], name="alert_kind_status"),
            models.Index(fields=["owner", "-opened_at"], name="alert_owner_opened"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.title}"

    @property
    def is_open(self) -> bool:
        return self.status != AlertStatus.RESOLVED

    def is_snoozed(self, now=None) -> bool:
        return self.snoozed_until is not None and self.snoozed_until > (now or timezone.now())

    @property
    def severity_colour(self) -> str:
        return AlertSeverity(self.severity).colour

    @property
    def status_colour(self) -> str:
        return AlertStatus(self.status).colour


class AlertEvent(models.Model):
    """A state change of an alert, claimed exactly once by the dispatcher that notifies people."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=32, choices=AlertEventKind.choices)
    old_status = models.CharField(max_length=16, choices=AlertStatus.choices, blank=True)
    new_status = models.CharField(max_length=16, choices=AlertStatus.choices)
    reason = models.TextField(blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="alert_events"
    )
    created = models.DateTimeField(default=timezone.now)
    processed = models.DateTimeField(null=True, blank=True, help_text="When the dispatcher claimed it.")

    class Meta:
        ordering = ["created", "id"]
        indexes = [
            models.Index(fields=["created"], condition=Q(processed__isnull=True), name="alertevent_unprocessed"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} ({self.alert_id})"


def window_validators() -> list:
    return [MinValueValidator(1, "The window must be at least one minute.")]


class IdlePolicy(models.Model):
    """A project's own idle-process thresholds (empty = the fleet default) and its reclaim opt-in."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="idle_policy")
    min_memory_mib = models.IntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0, "Memory cannot be negative.")],
        help_text="A process holding at least this much GPU memory can be idle.",
    )
    max_util_pct = models.FloatField(
        null=True,
        blank=True,
        validators=[
            MinValueValidator(0.1, "The utilization threshold must be above 0 %%."),
            MaxValueValidator(100, "The utilization threshold cannot exceed 100 %%."),
        ],
        help_text="Idle means the GPU (or the process's own SM share) stays under this.",
    )
    window_minutes = models.IntegerField(
        null=True, blank=True, validators=window_validators(), help_text="For this many minutes."
    )
    reclaim = models.BooleanField(
        default=False, help_text="End idle processes at 3× the window, after warnings at 1× and 2×."
    )
    reclaim_grace_s = models.IntegerField(
        default=30,
        validators=[MinValueValidator(1, "The grace period must be at least one second.")],
        help_text="Seconds between SIGTERM and SIGKILL.",
    )

    class Meta:
        verbose_name = "idle-process policy"
        verbose_name_plural = "idle-process policies"
        constraints = [
            models.CheckConstraint(
                condition=Q(min_memory_mib__isnull=True) | Q(min_memory_mib__gte=0),
                name="idlepolicy_memory_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(max_util_pct__isnull=True) | Q(max_util_pct__gt=0, max_util_pct__lte=100),
                name="idlepolicy_util_in_range",
            ),
            models.CheckConstraint(
                condition=Q(window_minutes__isnull=True) | Q(window_minutes__gte=1), name="idlepolicy_window_positive"
            ),
            models.CheckConstraint(condition=Q(reclaim_grace_s__gte=1), name="idlepolicy_grace_positive"),
        ]

    def __str__(self) -> str:
        return f"Idle policy of {self.project}"


class IdleStretch(models.Model):
    """A process idle over at least its whole window, from the window's start to the last evaluation that saw it."""

    key = models.CharField(max_length=200, help_text="The idle-process condition's key (GPU, pid, start time).")
    kind = models.CharField(max_length=16, choices=IdleStretchKind.choices)
    gpu = models.ForeignKey(GPU, on_delete=models.CASCADE, related_name="idle_stretches")
    pid = models.PositiveIntegerField()
    os_user = models.CharField(max_length=64, blank=True)
    name = models.CharField(max_length=200, blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="idle_stretches"
    )
    project = models.ForeignKey(
        Project, on_delete=models.SET_NULL, null=True, blank=True, related_name="idle_stretches"
    )
    began = models.DateTimeField()
    until = models.DateTimeField(help_text="The last evaluation that found it idle.")
    rate = models.DecimalField(
        max_digits=8, decimal_places=3, null=True, blank=True, help_text="USD per GPU-hour when measured."
    )

    class Meta:
        ordering = ["-began"]
        constraints = [
            models.CheckConstraint(condition=Q(until__gte=models.F("began")), name="idlestretch_ends_after_start")
        ]
        indexes = [
            models.Index(fields=["key", "-until"], name="idlestretch_key_until"),
            models.Index(fields=["until"], name="idlestretch_until"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.name} (pid {self.pid}) {self.began:%Y-%m-%d %H:%M}"


class ReclaimExemption(models.Model):
    """A user, node or run whose idle processes are never reclaimed (alerts still go out)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="reclaim_exemptions"
    )
    node = models.ForeignKey(Node, on_delete=models.CASCADE, null=True, blank=True, related_name="reclaim_exemptions")
    run = models.ForeignKey(
        "training.Run", on_delete=models.CASCADE, null=True, blank=True, related_name="reclaim_exemptions"
    )
    reason = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, node__isnull=True, run__isnull=True)
                | Q(user__isnull=True, node__isnull=False, run__isnull=True)
                | Q(user__isnull=True, node__isnull=True, run__isnull=False),
                name="reclaimexemption_exactly_one_subject",
                violation_error_message="Exempt exactly one user, node or run.",
            )
        ]

    def __str__(self) -> str:
        subject = self.user or self.node or self.run
        return f"Exempt from reclaim: {subject}"


class EndedProcess(models.Model):
    """What ending one GPU process on its node records: the process as its GPU reported it (the node worker
    checks the pid still names it before it signals, monitoring/alerts/ending.py), when it was signalled and
    how it ended. Idle reclaim (``Reclaim``) and the process table's End (``ProcessStop``) share it; each adds
    why it was asked, its node, GPU and owner (their reverse names differ) and its grace (an idle process's
    whole seconds, a run cancel's seconds), so that sharing them changes no table and needs no migration."""

    os_user = models.CharField(max_length=64, blank=True)
    pid = models.PositiveIntegerField()
    cmdline = models.TextField(blank=True)
    process_started_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=ReclaimStatus.choices, default=ReclaimStatus.REQUESTED)
    requested_at = models.DateTimeField(default=timezone.now)
    signalled_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        abstract = True
        ordering = ["-requested_at"]

    @property
    def status_colour(self) -> str:
        return ReclaimStatus(self.status).colour


class Reclaim(EndedProcess):
    """Ending one idle process: who owned it, what it was, when it was signalled and how it ended."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="reclaims")
    node = models.ForeignKey(Node, on_delete=models.SET_NULL, null=True, related_name="reclaims")
    gpu = models.ForeignKey(GPU, on_delete=models.SET_NULL, null=True, related_name="reclaims")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="reclaims"
    )
    grace_s = models.PositiveIntegerField(default=30)

    class Meta(EndedProcess.Meta):
        constraints = [models.UniqueConstraint(fields=["alert"], name="reclaim_once_per_alert")]

    def __str__(self) -> str:
        return f"Reclaim of pid {self.pid} ({self.os_user}) on {self.node}"


class Silence(models.Model):
    """Mutes notifications of the alerts it matches for a period, the way Alertmanager's silences do: every
    matcher given must match (node, owner, rule); the alerts still open and show on the pages."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, null=True, blank=True, related_name="silences")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="silences",
        help_text="The alerts' owner.",
    )
    kind = models.CharField(max_length=32, choices=alert_kinds, blank=True, help_text="The rule's alert kind.")
    starts_at = models.DateTimeField(default=timezone.now)
    ends_at = models.DateTimeField()
    reason = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-ends_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(node__isnull=False) | Q(user__isnull=False) | ~Q(kind=""),
                name="silence_matches_something",
                violation_error_message="Silence by node, user or rule (at least one).",
            ),
            models.CheckConstraint(condition=Q(ends_at__gte=F("starts_at")), name="silence_ends_after_start"),
            models.CheckConstraint(condition=~Q(reason=""), name="silence_has_reason"),
        ]
        indexes = [models.Index(fields=["ends_at"], name="silence_ends_at")]

    def __str__(self) -> str:
        return f"Silence of {self.matchers()} until {self.ends_at:%Y-%m-%d %H:%M} UTC"

    def matchers(self) -> str:
        parts = [f"node {self.node}" if self.node_id else "", f"user {self.user}" if self.user_id else ""]
        parts.append(f"rule {self.get_kind_display()}" if self.kind else "")
        return ", ".join(p for p in parts if p)

    def matches(self, alert: Alert) -> bool:
        return (
            (self.node_id is None or self.node_id == alert.node_id)
            and (self.user_id is None or self.user_id == alert.owner_id)
            and (not self.kind or self.kind == alert.kind)
        )

    def is_active(self, now=None) -> bool:
        now = now or timezone.now()
        return self.starts_at <= now < self.ends_at
