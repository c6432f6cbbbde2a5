"""A run's output on one node turned into a few database writes a second: progress, logs, heartbeats.

Lines are collected as they arrive; ``flush`` writes them in one transaction, updates the run's
latest progress and the node's heartbeat, and broadcasts the batch to the run's watchers after the
commit. The same serializer as the JSON API builds that message.
"""

import logging
from datetime import UTC, datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from training import broadcast
from training.models import IllegalTransition, Run, RunLog, RunMetric, RunNode
from training.serializers import state_payload
from training.variables import redact, secret_values
from training.workloads import event_lines

log = logging.getLogger(__name__)

PROGRESS_FIELDS = ("step", "epoch", "loss", "accuracy", "samples_per_s", "gflops")
TAIL_LINES = 20


def _when(ts) -> datetime:
    if isinstance(ts, int | float) and 0 < ts < 1e11:
        return datetime.fromtimestamp(ts, tz=UTC)
    return timezone.now()


def _number(value) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None


class RunStream:
    """Batches one node's output of a run and writes it out."""

    def __init__(self, run: Run, part: RunNode):
        self.run = run
        self.part = part
        self.metrics: list[RunMetric] = []
        self.logs: list[RunLog] = []
        self.changes: dict = {}
        self.saw_output = False
        self.logged = 0
        self.tail: list[str] = []
        # A command may print a secret variable's value; it is masked before anything is kept.
        self.secrets = secret_values(run.variables)

    @property
    def pending(self) -> bool:
        return bool(self.metrics or self.logs or self.changes)

    def feed(self, line: str) -> None:
        self.saw_output = True
        line = redact(line, self.secrets)
        event = event_lines.parse_event(line)
        if event is None:
            self._log(line)
        else:
            self._event(event)

    def _log(self, line: str) -> None:
        if line.strip():
            self.tail = [*self.tail[-(TAIL_LINES - 1) :], line]
        self.logged += 1
        if self.logged > settings.RUN_LOG_MAX_LINES:
            if self.logged == settings.RUN_LOG_MAX_LINES + 1:
                line = f"[fleet] more than {settings.RUN_LOG_MAX_LINES} lines: later output is not kept"
            else:
                return
        self.logs.append(RunLog(run_id=self.run.pk, node_rank=self.part.rank, line=line))

    def _event(self, event: dict) -> None:
        kind = event["event"]
        if kind == "env":
            info = {key: value for key, value in event.items() if key != "event"}
            self.changes["environment"] = {**self.run.environment, **self.changes.get("environment", {}), **info}
        elif kind == "first_step":
            self.changes["first_step_at"] = _when(event.get("ts"))
        elif kind == "progress":
            self._progress(event)
        elif kind == "checkpoint":
            self._checkpoint(event)
        elif kind == "done":
            self.changes["result"] = {key: value for key, value in event.items() if key != "event"}
            if _number(event.get("accuracy")) is not None:
                self.changes["accuracy"] = _number(event["accuracy"])

    def _progress(self, event: dict) -> None:
        step = _count(event.get("step"))
        if step is None:
            return
        metric = RunMetric(
            run_id=self.run.pk,
            ts=_when(event.get("ts")),
            step=step,
            epoch=_count(event.get("epoch")),
            loss=_number(event.get("loss")),
            accuracy=_number(event.get("accuracy")),
            samples_per_s=_number(event.get("samples_per_s")),
            gflops=_number(event.get("gflops")),
        )
        self.metrics.append(metric)
        for field in PROGRESS_FIELDS:
            value = getattr(metric, field)
            if value is not None:
                self.changes[field] = value

    def _checkpoint(self, event: dict) -> None:
        step = _count(event.get("step"))
        if step is None:
            return
        self.changes["checkpoint"] = {
            "step": step,
            "bytes": _count(event.get("bytes")),
            "seconds": _number(event.get("seconds")),
            "reason": str(event.get("reason") or "")[:40],
            "saved_at": _when(event.get("ts")).isoformat(),
        }

    def flush(self) -> None:
        """Write what arrived since the last flush, with a heartbeat, and tell the watchers."""
        now = timezone.now()
        with transaction.atomic():
            metrics = RunMetric.objects.bulk_create(self.metrics)
            logs = RunLog.objects.bulk_create(self.logs)
            Run.objects.filter(pk=self.run.pk).update(heartbeat_at=now, **self.changes)
            RunNode.objects.filter(pk=self.part.pk).update(heartbeat_at=now)
            if self.saw_output:
                self._mark_running()
            self.run.refresh_from_db()
            broadcast.send_after_commit(self.run.pk, state_payload(self.run, metrics, logs))
        self.metrics, self.logs, self.changes = [], [], {}

    def _mark_running(self) -> None:
        try:
            self.run.mark_running()
        except IllegalTransition:
            pass  # already ended by someone else (cancel, lost); the caller reacts to that

    def error_hint(self) -> str:
        """The last lines the processes printed, to explain a failure."""
        return "\n".join(self.tail[-5:])
