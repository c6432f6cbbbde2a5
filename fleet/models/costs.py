"""Monthly budgets of researchers (projects keep theirs on Project.monthly_budget)."""

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q


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
        constraints = [models.CheckConstraint(condition=Q(monthly_budget__gte=0), name="userbudget_not_negative")]

    def __str__(self) -> str:
        return f"Budget of {self.user}: {self.monthly_budget} USD/month"
