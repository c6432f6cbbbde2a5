"""Idle-process thresholds: the fleet defaults from settings, overridden field by field per project."""

from dataclasses import dataclass

from django.conf import settings

from monitoring.alerts.memo import once
from monitoring.alerts.models import IdlePolicy


@dataclass(frozen=True)
class Thresholds:
    """When a process counts as idle, and whether its project reclaims idle processes."""

    min_memory_mib: float
    max_util_pct: float
    window_minutes: int
    reclaim: bool = False
    reclaim_grace_s: int = 30


def fleet_defaults() -> Thresholds:
    return Thresholds(
        min_memory_mib=settings.ALERT_IDLE_MIN_MEMORY_MIB,
        max_util_pct=settings.ALERT_IDLE_MAX_UTIL_PCT,
        window_minutes=settings.ALERT_IDLE_WINDOW_MIN,
        reclaim=False,
        reclaim_grace_s=settings.RECLAIM_GRACE_S,
    )


def thresholds_for(policy: IdlePolicy | None, defaults: Thresholds) -> Thresholds:
    if policy is None:
        return defaults
    return Thresholds(
        min_memory_mib=defaults.min_memory_mib if policy.min_memory_mib is None else policy.min_memory_mib,
        max_util_pct=defaults.max_util_pct if policy.max_util_pct is None else policy.max_util_pct,
        window_minutes=defaults.window_minutes if policy.window_minutes is None else policy.window_minutes,
        reclaim=policy.reclaim,
        reclaim_grace_s=policy.reclaim_grace_s,
    )


class PolicyBook:
    """Every project's thresholds, loaded with one query."""

    def __init__(self) -> None:
        self.defaults = fleet_defaults()
        self.by_project = {p.project_id: p for p in IdlePolicy.objects.all()}

    def for_project(self, project_id: int | None) -> Thresholds:
        return thresholds_for(self.by_project.get(project_id), self.defaults)


def policy_book() -> PolicyBook:
    """The thresholds, loaded once per evaluation."""
    return once("policy_book", PolicyBook)
