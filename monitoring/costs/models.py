"""GPU time used per GPU, OS user and hour, measured from process samples and priced when measured."""

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from inventory.models import GPU, Project


class UsageHour(models.Model):
    """GPU-seconds one OS user's processes held one GPU within one hour, and what they cost."""

    gpu = models.ForeignKey(GPU, on_delete=models.CASCADE, related_name="usage_hours")
    bucket = models.DateTimeField(help_text="Start of the hour, UTC.")
    os_user = models.CharField(max_length=64)
    run_id = models.BigIntegerField(
        null=True, blank=True, help_text="The run these processes belonged to (the fleet started them), else empty."
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="usage_hours"
    )
    project = models.ForeignKey(Project, on_delete=models.SET_NULL, null=True, blank=True, related_name="usage_hours")
    gpu_seconds = models.FloatField(help_text="Sampled intervals with a process of this user on the GPU.")
    idle_seconds = models.FloatField(help_text="Of those, intervals holding memory while the GPU was idle.")
    rate = models.DecimalField(
        max_digits=8, decimal_places=3, null=True, blank=True, help_text="USD per GPU-hour when measured."
    )
    cost = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    idle_cost = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["gpu", "bucket", "os_user", "run_id"],
                name="usagehour_one_per_gpu_hour_user_run",
                nulls_distinct=False,
            )
        ]
        indexes = [
            models.Index(fields=["bucket"], name="usagehour_bucket"),
            models.Index(fields=["user", "bucket"], name="usagehour_user_bucket"),
            models.Index(fields=["project", "bucket"], name="usagehour_project_bucket"),
        ]

    def __str__(self) -> str:
        return f"{self.os_user} on {self.gpu_id} @ {self.bucket.isoformat()}"


class UsageMinute(models.Model):
    """Sampled instants one OS user's processes were on one GPU within one minute (kept two days)."""

    gpu = models.ForeignKey(GPU, on_delete=models.CASCADE, related_name="usage_minutes")
    bucket = models.DateTimeField(help_text="Start of the minute, UTC.")
    os_user = models.CharField(max_length=64)
    run_id = models.BigIntegerField(null=True, blank=True)
    samples = models.PositiveIntegerField()
    idle_samples = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["gpu", "bucket", "os_user", "run_id"],
                name="usageminute_one_per_gpu_minute_user_run",
                nulls_distinct=False,
            )
        ]
        indexes = [models.Index(fields=["bucket"], name="usageminute_bucket")]

    def __str__(self) -> str:
        return f"{self.os_user} on {self.gpu_id} @ {self.bucket.isoformat()}"


class UserBudget(models.Model):
    """What one researcher may spend on GPU time per calendar month, in USD."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="budget")
    monthly_budget = models.DecimalField(
        max_digits=12,
        decimal_places=2,
        validators=[MinValueValidator(0, "A budget cannot be below zero.")],
        help_text="USD per calendar month.",
    )

    class Meta:
        db_table = "fleet_userbudget"  # made when budgets lived in the inventory app
        constraints = [models.CheckConstraint(condition=Q(monthly_budget__gte=0), name="userbudget_not_negative")]

    def __str__(self) -> str:
        return f"Budget of {self.user}: {self.monthly_budget} USD/month"
