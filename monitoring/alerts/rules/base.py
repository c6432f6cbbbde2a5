"""What the engine asks of every rule, and the hook through which a rule does its own follow-up work."""

from datetime import datetime

from monitoring.alerts.findings import RuleResult
from monitoring.alerts.models import Alert


class Rule:
    """Finds conditions of its `kind` (or its `kinds`); the engine opens, keeps and resolves their alerts.

    `escalates`: its alerts still open after ALERT_ESCALATE_AFTER_H go to the admins.
    """

    escalates = False

    @property
    def kinds(self) -> list:
        return [self.kind]

    def evaluate(self, now: datetime, open_alerts: list[Alert]) -> RuleResult:
        raise NotImplementedError

    def follow_up(self, result: RuleResult, firing: list[Alert], now: datetime) -> None:
        """The rule's own work once the engine has applied `result`: `firing` are its alerts that were open
        and are still found. A rule with more to do than alerts (the idle rule's reclaim warnings and idle
        stretches) does it here, so the engine never asks which rule it is running. Nothing by default."""
