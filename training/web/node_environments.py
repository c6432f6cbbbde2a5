"""What each node offers runs to use (venvs, conda envs, images), as its node worker last reported it.

The launch form lists these as suggestions beside the environment picker; the launch still checks whatever is
typed (training/launching/commands.py). A report is ``{kind: [refs]}``
(training/node/worker_presence.py); an unknown kind or anything else malformed is left out rather than shown.
"""

from __future__ import annotations

from training import environments
from training.models import WorkerPresence


def offered() -> dict[str, dict[str, list[str]]]:
    """{hostname: {kind: [refs]}} for every node whose worker reported something."""
    found: dict[str, dict[str, list[str]]] = {}
    for hostname, report in WorkerPresence.objects.values_list("node__hostname", "environments"):
        kinds = by_kind(report)
        if kinds:
            found[hostname] = kinds
    return found


def by_kind(report) -> dict[str, list[str]]:
    pairs = []
    if isinstance(report, dict):
        pairs = [(kind, ref) for kind, refs in report.items() if isinstance(refs, list) for ref in refs]
    kinds: dict[str, list[str]] = {}
    for kind, ref in pairs:
        if kind in environments.names() and isinstance(ref, str) and ref and ref not in kinds.get(kind, []):
            kinds.setdefault(kind, []).append(ref)
    return kinds
