"""Who sees and acts on which alerts: researchers their own (and their projects'), admins all."""

from django.db.models import Q, QuerySet

from monitoring.alerts.models import Alert


def visible_alerts(user) -> QuerySet:
    alerts = Alert.objects.select_related("owner", "project", "node", "gpu")
    if user.is_staff:
        return alerts
    return alerts.filter(Q(owner=user) | Q(owner__isnull=True, project__in=user.projects.all()))


def scope_for(user, asked: str | None) -> str:
    """Which alerts a list shows: admins see every open alert unless they ask for "mine"; researchers their own."""
    if not user.is_staff:
        return "mine"
    return "mine" if asked == "mine" else "all"


def mine(user) -> Q:
    return Q(owner=user) | Q(owner__isnull=True, project__in=user.projects.all())


def can_act(user, alert: Alert) -> bool:
    """Acknowledge or snooze: the owner, a member for a project's alert, or an admin."""
    if user.is_staff or alert.owner_id == user.pk:
        return True
    return alert.owner_id is None and alert.project_id is not None and alert.project.members.filter(pk=user.pk).exists()
