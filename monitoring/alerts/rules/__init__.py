"""The alert rules; each has a `kind` and `evaluate(now, open_alerts) -> RuleResult`."""
