"""The monitoring app's models, each defined beside the part that owns it; importing them here registers them."""

from monitoring.alerts.models import Alert, AlertEvent, IdlePolicy, IdleStretch, Reclaim, ReclaimExemption
from monitoring.costs.models import UsageHour, UsageMinute, UserBudget
from monitoring.health.models import BurnIn
from monitoring.ingest.models import AgentSession, NodeStatusChange, SecurityEvent
from monitoring.notify.models import Notification, NotificationPreference, UnderusedReported
from monitoring.processes.models import ProcessStop
from monitoring.storage.models import (
    GPUHour,
    GPUMinute,
    GPUSample,
    GPUState,
    NvLinkState,
    ProcessSample,
    RollupProgress,
)

__all__ = [
    "AgentSession",
    "Alert",
    "AlertEvent",
    "BurnIn",
    "GPUHour",
    "GPUMinute",
    "GPUSample",
    "GPUState",
    "IdlePolicy",
    "IdleStretch",
    "Notification",
    "NotificationPreference",
    "NodeStatusChange",
    "NvLinkState",
    "ProcessSample",
    "ProcessStop",
    "Reclaim",
    "ReclaimExemption",
    "RollupProgress",
    "SecurityEvent",
    "UnderusedReported",
    "UsageHour",
    "UsageMinute",
    "UserBudget",
]
