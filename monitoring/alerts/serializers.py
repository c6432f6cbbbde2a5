"""JSON of alerts, their history, idle-process policies and budgets."""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.urls import reverse
from rest_framework import serializers
from rest_framework.validators import UniqueValidator

from inventory.models import Node
from monitoring.alerts import silences
from monitoring.alerts.choices import AlertKind
from monitoring.alerts.models import Alert, AlertEvent, IdlePolicy, Silence
from monitoring.costs.models import UserBudget


class AlertEventSerializer(serializers.ModelSerializer):
    actor = serializers.StringRelatedField(allow_null=True)

    class Meta:
        model = AlertEvent
        fields = ["id", "kind", "old_status", "new_status", "reason", "actor", "created"]


class AlertSerializer(serializers.ModelSerializer):
    owner = serializers.StringRelatedField(allow_null=True)
    project = serializers.StringRelatedField(allow_null=True)
    node = serializers.StringRelatedField(allow_null=True)
    gpu = serializers.SlugRelatedField(slug_field="uuid", read_only=True, allow_null=True)
    acknowledged_by = serializers.StringRelatedField(allow_null=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Alert
        fields = [
            "id",
            "kind",
            "severity",
            "status",
            "title",
            "message",
            "owner",
            "project",
            "node",
            "gpu",
            "details",
            "opened_at",
            "last_seen_at",
            "stage",
            "escalated_at",
            "acknowledged_at",
            "acknowledged_by",
            "snoozed_until",
            "resolved_at",
            "resolution",
            "url",
        ]

    def get_url(self, obj: Alert) -> str:
        return reverse("monitoring:alert", args=[obj.pk])


class AlertDetailSerializer(AlertSerializer):
    events = AlertEventSerializer(many=True, read_only=True)

    class Meta(AlertSerializer.Meta):
        fields = [*AlertSerializer.Meta.fields, "events"]


class SnoozeSerializer(serializers.Serializer):
    minutes = serializers.IntegerField(
        min_value=1, max_value=7 * 24 * 60, help_text="How long to silence emails and webhooks (1 minute to 7 days)."
    )


class IdlePolicySerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(
        slug_field="name",
        queryset=IdlePolicy.project.field.related_model.objects,
        validators=[
            UniqueValidator(
                IdlePolicy.objects.all(), message="This project already has an idle policy; change that one."
            )
        ],
    )

    class Meta:
        model = IdlePolicy
        fields = ["id", "project", "min_memory_mib", "max_util_pct", "window_minutes", "reclaim", "reclaim_grace_s"]
        extra_kwargs = {
            "min_memory_mib": {"error_messages": {"min_value": "Memory cannot be negative."}},
            "max_util_pct": {
                "error_messages": {
                    "min_value": "The utilization threshold must be above 0 %%.",
                    "max_value": "The utilization threshold cannot exceed 100 %%.",
                }
            },
            "window_minutes": {"error_messages": {"min_value": "The window must be at least one minute."}},
            "reclaim_grace_s": {"error_messages": {"min_value": "The grace period must be at least one second."}},
        }


class UserBudgetSerializer(serializers.ModelSerializer):
    user = serializers.SlugRelatedField(
        slug_field="username",
        queryset=UserBudget.user.field.related_model.objects.all(),
        validators=[
            UniqueValidator(UserBudget.objects.all(), message="This researcher already has a budget; change that one.")
        ],
    )

    class Meta:
        model = UserBudget
        fields = ["id", "user", "monthly_budget"]
        extra_kwargs = {"monthly_budget": {"error_messages": {"min_value": "A budget cannot be below zero."}}}


class SilenceSerializer(serializers.ModelSerializer):
    node = serializers.SlugRelatedField(
        slug_field="hostname", queryset=Node.objects.all(), required=False, allow_null=True, help_text="A hostname."
    )
    user = serializers.SlugRelatedField(
        slug_field="username",
        queryset=get_user_model().objects.all(),
        required=False,
        allow_null=True,
        help_text="The alerts' owner (a username).",
    )
    kind = serializers.ChoiceField(choices=AlertKind.choices, required=False, allow_blank=True, help_text="The rule.")
    minutes = serializers.IntegerField(
        write_only=True,
        min_value=1,
        max_value=int(silences.MAX_DURATION.total_seconds() // 60),
        help_text="How long, from now: 1 minute to 30 days.",
    )
    reason = serializers.CharField(max_length=200)
    created_by = serializers.StringRelatedField(allow_null=True)
    active = serializers.SerializerMethodField()

    class Meta:
        model = Silence
        fields = ["id", "node", "user", "kind", "minutes", "reason", "starts_at", "ends_at", "created_by", "active"]
        read_only_fields = ["starts_at", "ends_at"]

    def get_active(self, obj: Silence) -> bool:
        return obj.is_active()

    def validate(self, data: dict) -> dict:
        if not (data.get("node") or data.get("user") or data.get("kind")):
            raise serializers.ValidationError("Silence by node, user or rule (at least one).")
        return data

    def create(self, data: dict) -> Silence:
        return silences.create(
            by=self.context["request"].user,
            duration=timedelta(minutes=data["minutes"]),
            reason=data["reason"],
            node=data.get("node"),
            user=data.get("user"),
            kind=data.get("kind") or "",
        )
