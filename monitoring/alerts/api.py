"""/api/alerts/ (list, detail, acknowledge, snooze), /api/silences/, /api/idle-policies/ and /api/budgets/users/."""

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from monitoring.alerts import lifecycle, silences
from monitoring.alerts.access import can_act, mine, scope_for, visible_alerts
from monitoring.alerts.choices import AlertKind, AlertStatus
from monitoring.alerts.models import Alert, IdlePolicy, Silence
from monitoring.alerts.serializers import (
    AlertDetailSerializer,
    AlertSerializer,
    IdlePolicySerializer,
    SilenceSerializer,
    SnoozeSerializer,
    UserBudgetSerializer,
)
from monitoring.costs.models import UserBudget


class StaffWritesOthersRead(permissions.BasePermission):
    """Anyone logged in reads; only admins change."""

    def has_permission(self, request, view) -> bool:
        return request.method in permissions.SAFE_METHODS or bool(request.user and request.user.is_staff)


# The filters are the list's alone: declared on it only, so a detail or an action refuses them (400).
@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("status", str, enum=["open", "resolved"], description="Open (default) or resolved."),
            OpenApiParameter(
                "scope",
                str,
                enum=["mine", "all"],
                description="Admins see all by default; mine narrows to their own. Researchers always see their own.",
            ),
            OpenApiParameter("kind", str, enum=AlertKind.values),
        ]
    )
)
class AlertViewSet(viewsets.ReadOnlyModelViewSet):
    """Alerts a researcher owns (or their projects'); admins see all. Newest first, 100 a page."""

    lookup_value_regex = "[0-9]+"

    serializer_class = AlertSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema generator has no user
            return Alert.objects.none()
        user, params = self.request.user, self.request.query_params
        alerts = visible_alerts(user).order_by("-opened_at")
        if "scope" in params and params["scope"] not in ("mine", "all"):
            raise ValidationError({"scope": 'Use "mine" or "all".'})
        # One alert by its URL: admins read any; `scope` only narrows the list.
        if self.action == "list" and scope_for(user, params.get("scope")) == "mine":
            alerts = alerts.filter(mine(user))
        if self.action == "list":
            status = params.get("status", "open")
            if status not in ("open", "resolved"):
                raise ValidationError({"status": 'Use "open" or "resolved".'})
            alerts = (
                alerts.filter(status=AlertStatus.RESOLVED)
                if status == "resolved"
                else alerts.exclude(status=AlertStatus.RESOLVED)
            )
            if "kind" in params:
                if params["kind"] not in AlertKind.values:
                    raise ValidationError({"kind": f"Use one of {', '.join(AlertKind.values)}."})
                alerts = alerts.filter(kind=params["kind"])
        return alerts

    def get_serializer_class(self):
        return AlertDetailSerializer if self.action != "list" else AlertSerializer

    def actionable(self):
        alert = visible_alerts(self.request.user).filter(pk=self.kwargs["pk"]).first()
        if alert is None:
            from django.http import Http404

            raise Http404
        if not can_act(self.request.user, alert):
            raise PermissionDenied("Only the alert's owner or an admin can do that.")
        return alert

    @extend_schema(request=None, responses=AlertDetailSerializer)
    @action(detail=True, methods=["post"])
    def acknowledge(self, request, pk=None):
        alert = self.actionable()
        try:
            lifecycle.acknowledge(alert, request.user)
        except lifecycle.AlertActionError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        alert.refresh_from_db()
        return Response(AlertDetailSerializer(alert).data)

    @extend_schema(request=SnoozeSerializer, responses=AlertDetailSerializer)
    @action(detail=True, methods=["post"])
    def snooze(self, request, pk=None):
        alert = self.actionable()
        body = SnoozeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            lifecycle.snooze(alert, request.user, timedelta(minutes=body.validated_data["minutes"]))
        except lifecycle.AlertActionError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        alert.refresh_from_db()
        return Response(AlertDetailSerializer(alert).data)


class IdlePolicyViewSet(viewsets.ModelViewSet):
    """Per-project idle thresholds and reclaim opt-in; empty fields use the fleet defaults."""

    serializer_class = IdlePolicySerializer
    permission_classes = [permissions.IsAuthenticated, StaffWritesOthersRead]
    queryset = IdlePolicy.objects.select_related("project").order_by("project__name")
    lookup_value_regex = "[0-9]+"


class UserBudgetViewSet(viewsets.ModelViewSet):
    """Monthly budgets of researchers (admins only)."""

    serializer_class = UserBudgetSerializer
    permission_classes = [permissions.IsAdminUser]
    queryset = UserBudget.objects.select_related("user").order_by("user__username")
    lookup_value_regex = "[0-9]+"


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("active", bool, description="Only the silences in force now (true) or not (false).")
        ]
    )
)
class SilenceViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Admin silences: the alerts they match notify nobody until they end. Anyone reads; admins add and
    expire (DELETE ends a silence now and keeps it as history)."""

    serializer_class = SilenceSerializer
    permission_classes = [permissions.IsAuthenticated, StaffWritesOthersRead]
    lookup_value_regex = "[0-9]+"

    def get_queryset(self):
        rows = Silence.objects.select_related("node", "user", "created_by")
        if self.action == "list" and "active" in self.request.query_params:
            wanted = self.request.query_params["active"]
            if wanted not in ("true", "false"):
                raise ValidationError({"active": 'Use "true" or "false".'})
            now = timezone.now()
            live = Q(starts_at__lte=now, ends_at__gt=now)
            rows = rows.filter(live) if wanted == "true" else rows.exclude(live)
        return rows

    def perform_destroy(self, instance: Silence) -> None:
        silences.expire(instance)
