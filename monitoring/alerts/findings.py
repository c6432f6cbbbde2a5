"""What a rule reports: the conditions it finds true now, and the open alerts it finds cleared."""

from dataclasses import dataclass, field

from monitoring.alerts.choices import AlertKind, AlertSeverity


@dataclass
class Finding:
    """A condition that holds right now; `key` names it so it maps onto at most one open alert."""

    key: str
    kind: AlertKind
    title: str
    message: str = ""
    severity: AlertSeverity = AlertSeverity.WARNING
    owner_id: int | None = None
    project_id: int | None = None
    node_id: int | None = None
    gpu_id: int | None = None
    details: dict = field(default_factory=dict)


@dataclass
class RuleResult:
    """Findings (new or still true) and the open alerts to resolve (alert key → reason).

    A rule that needs more for its own follow-up returns a subclass carrying it (the idle rule's stretches).
    """

    findings: list[Finding] = field(default_factory=list)
    resolved: dict[str, str] = field(default_factory=dict)

    def extend(self, other: "RuleResult") -> None:
        self.findings += other.findings
        self.resolved.update(other.resolved)
