"""Idle processes: a process holding at least X MiB while its GPU (or its own SM share) stays under Y % for T minutes.

Everything is measured over the window (rolled-up minutes plus raw samples), never read off one snapshot,
so a data-loader stall shorter than T raises nothing. Only a forgotten process (no real work for hours,
monitoring/alerts/rules/idle/forgotten.py) is alerted; one that worked in between is underused: recorded as an idle
stretch for the underused-GPU report, never alerted, escalated or reclaimed.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property

from django.db.models import Q

from inventory.models import GPU
from monitoring.alerts.attribution import Attribution
from monitoring.alerts.choices import AlertKind, AlertSeverity, IdleStretchKind
from monitoring.alerts.findings import Finding, RuleResult
from monitoring.alerts.gpu_rows import GpuRow, gpu_rows
from monitoring.alerts.models import Alert
from monitoring.alerts.policies import Thresholds, policy_book
from monitoring.alerts.rules.base import Rule
from monitoring.alerts.rules.idle import clearing, forgotten, stages, stretches
from monitoring.alerts.rules.idle.stretches import Sighting
from monitoring.alerts.windows import (
    WindowStats,
    gpu_util_windows,
    head_slack,
    process_memory_since,
    process_sm_windows,
    seen_at,
    stale_after,
)
from monitoring.storage import latest
from training.owners import ProcessOwners, believed_run

KIND = AlertKind.IDLE_PROCESS
MOMENT = timedelta(seconds=1)


@dataclass
class Candidate:
    """A process in a GPU's latest state, with its owner and the thresholds that apply to it.

    Its pid, start and key are worked out once: an evaluation asks for them thousands of times.
    """

    gpu: GpuRow
    process: dict
    owner_id: int | None
    project_id: int | None
    limits: Thresholds
    run_id: int | None = None

    @cached_property
    def pid(self) -> int:
        return int(self.process["pid"])

    @cached_property
    def started_at(self) -> datetime | None:
        started = self.process.get("started_at")
        return None if started is None else datetime.fromtimestamp(float(started), tz=UTC)

    @cached_property
    def key(self) -> str:
        started = self.process.get("started_at")
        return f"{KIND}:{self.gpu.uuid}:{self.pid}:{'na' if started is None else int(float(started))}"

    @property
    def holds_memory(self) -> bool:
        memory = self.process.get("mem_used_mib")
        return memory is not None and memory >= self.limits.min_memory_mib


def load_gpus(open_alerts: list[Alert]) -> list[GpuRow]:
    open_gpu_ids = {a.gpu_id for a in open_alerts if a.gpu_id}
    return gpu_rows(GPU.objects.filter(latest.with_processes() | Q(id__in=open_gpu_ids)))


def candidates_of(gpus: list[GpuRow], now: datetime) -> list[Candidate]:
    fresh = [g for g in gpus if g.last_sample_at and g.last_sample_at >= now - stale_after()]
    processes = [(gpu, p) for gpu in fresh for p in gpu.processes or [] if p.get("pid") is not None]
    owners = ProcessOwners(p for _, p in processes)
    uses = Attribution({g.id for g, _ in processes}, {u.id for u in owners.users()}, now - MOMENT, now)
    book = policy_book()
    found = []
    for gpu, process in processes:
        owner = owners.of(process)
        owner_id = owner.id if owner else None
        project_id, run_id = uses.of(gpu.id, owner_id, now - MOMENT, now, believed_run(process))
        found.append(Candidate(gpu, process, owner_id, project_id, book.for_project(project_id), run_id))
    return found


@dataclass
class IdleResult(RuleResult):
    """The rule's findings, and every process seen idle over its window (forgotten or underused) for its stretches."""

    sightings: list[Sighting] = field(default_factory=list)


class IdleProcessRule(Rule):
    """Finds idle processes and resolves their alerts when they work again, let go of memory, or exit."""

    kind = KIND
    escalates = True  # still open after ALERT_ESCALATE_AFTER_H: the admins hear about it

    def evaluate(self, now: datetime, open_alerts: list[Alert]) -> IdleResult:
        gpus = load_gpus(open_alerts)
        candidates = candidates_of(gpus, now)
        verdicts = judge(candidates, now)
        idle = [(c, verdicts[c.key][1], window_start(c, now)) for c in candidates if verdicts.get(c.key)]
        underused = forgotten.worked(idle, now)
        result = IdleResult()
        for candidate, basis, since in idle:
            kind = IdleStretchKind.UNDERUSED if candidate.key in underused else IdleStretchKind.FORGOTTEN
            result.sightings.append(Sighting(candidate, kind, since))
            if kind == IdleStretchKind.FORGOTTEN:
                result.findings.append(finding(candidate, verdicts[candidate.key][0], basis, now))
        # An alert whose process is idle over its window right now cannot have cleared: only the others are read.
        still_idle = {c.key for c, _, _ in idle}
        unsure = [a for a in open_alerts if a.key not in still_idle]
        result.resolved = clearing.resolutions(unsure, gpus, {c.key: c for c in candidates}, now)
        return result

    def follow_up(self, result: IdleResult, firing: list[Alert], now: datetime) -> None:
        """Reclaim's next stage for the alerts still firing, then the idle stretches as rows."""
        stages.advance(firing, now)
        stretches.record(result.sightings, now)


def window_start(candidate: Candidate, now: datetime) -> datetime:
    return now - timedelta(minutes=candidate.limits.window_minutes)


def judge(candidates: list[Candidate], now: datetime) -> dict[str, tuple[WindowStats, str] | None]:
    """For each process holding memory: (stats, basis) when idle over its whole window, None when not.

    Processes whose window is not measured to its end get no verdict at all.
    """
    holding = [c for c in candidates if c.holds_memory and reports_until(c.gpu, now)]
    verdicts: dict = {}
    for minutes in {c.limits.window_minutes for c in holding}:
        group = [c for c in holding if c.limits.window_minutes == minutes]
        verdicts.update(judge_window(group, now - timedelta(minutes=minutes), now))
    return verdicts


def reports_until(gpu: GpuRow, now: datetime) -> bool:
    """The GPU's samples reach the end of the window (a GPU that stopped inside it is "no data", not idle)."""
    return gpu.last_sample_at is not None and now - gpu.last_sample_at <= head_slack()


def judge_window(group: list[Candidate], start: datetime, now: datetime) -> dict:
    gpu_stats = gpu_util_windows(sorted({c.gpu.id for c in group}), start, now, busy_enough(group))
    # Only a GPU shared by several processes needs each one's own SM share: alone, a process is its GPU's load.
    shared = [c for c in group if busy_gpu(c, gpu_stats) and c.process.get("sm_util") is not None and shares(c)]
    process_stats = process_sm_windows([(c.gpu.id, c.pid) for c in shared], start, now)
    unknown_start = [(c.gpu.id, c.pid) for c in group if c.started_at is None]
    seen = seen_at(unknown_start, start)
    verdicts: dict = {}
    for c in group:
        stats = gpu_stats.get(c.gpu.id)
        if stats is None or not stats.covered:
            continue
        if stats.peak is not None and stats.peak < c.limits.max_util_pct:
            verdict = (stats, "gpu")
        elif (c.gpu.id, c.pid) in process_stats:
            own = process_stats[(c.gpu.id, c.pid)]
            if not own.covered:
                continue
            verdict = (own, "process") if own.peak is not None and own.peak < c.limits.max_util_pct else None
        else:
            verdict = None
        present = c.started_at <= start if c.started_at else (c.gpu.id, c.pid) in seen
        if verdict is not None and not present:
            continue
        verdicts[c.key] = verdict
    return held_memory_throughout(group, verdicts, start, now)


def held_memory_throughout(group: list[Candidate], verdicts: dict, start: datetime, now: datetime) -> dict:
    """Idle only if every known memory reading in the window is at least X (a model loaded mid-window is not).

    A process already idle at the last evaluation had its readings checked up to then (its idle stretch
    reaches back to this window's start), so only the readings since are read: seconds, not the window.
    """
    idle = [c for c in group if verdicts.get(c.key) is not None]
    checked = stretches.checked_until([c.key for c in idle], start)
    memory = process_memory_since([(c.gpu.id, c.pid, checked.get(c.key, start)) for c in idle], now)
    for c in idle:
        known = memory[(c.gpu.id, c.pid)]
        if known.low is None and c.key in checked:
            continue  # nothing new since the last check: unknown says nothing
        if known.low is None or known.low < c.limits.min_memory_mib:
            verdicts[c.key] = None
    return verdicts


def busy_enough(group: list[Candidate]) -> dict[int, float]:
    """GPU id → the utilization past which none of its processes can be idle (each is judged by its GPU).

    A GPU with a process that would be judged by its own SM share is left out: its GPU being busy says nothing.
    """
    found: dict[int, float] = {}
    own_share = set()
    for c in group:
        if c.process.get("sm_util") is not None and shares(c):
            own_share.add(c.gpu.id)
        found[c.gpu.id] = max(found.get(c.gpu.id, 0.0), c.limits.max_util_pct)
    return {gpu_id: limit for gpu_id, limit in found.items() if gpu_id not in own_share}


def shares(candidate: Candidate) -> bool:
    return len(candidate.gpu.processes or []) > 1


def busy_gpu(candidate: Candidate, gpu_stats: dict[int, WindowStats]) -> bool:
    stats = gpu_stats.get(candidate.gpu.id)
    return stats is not None and stats.peak is not None and stats.peak >= candidate.limits.max_util_pct


def finding(c: Candidate, stats: WindowStats, basis: str, now: datetime) -> Finding:
    p, gpu, limits = c.process, c.gpu, c.limits
    where = f"{gpu.hostname} GPU {gpu.index}"
    memory = p.get("mem_used_mib") or 0
    name = p.get("name") or "process"
    what = "the GPU" if basis == "gpu" else "its own SM share"
    message = (
        f"{p.get('user') or 'an unknown user'}'s {name} (pid {c.pid}) holds {memory / 1024:.1f} GiB on {where} "
        f"while {what} stayed under {limits.max_util_pct:g} % for {limits.window_minutes} min "
        f"(peak {stats.peak:g} %)."
    )
    return Finding(
        key=c.key,
        kind=KIND,
        severity=AlertSeverity.WARNING,
        title=f"Idle {name} (pid {c.pid}) on {where}",
        message=message,
        owner_id=c.owner_id,
        project_id=c.project_id,
        node_id=gpu.node_id,
        gpu_id=gpu.id,
        details={
            "gpu": gpu.uuid,
            "node": gpu.hostname,
            "index": gpu.index,
            "pid": c.pid,
            "os_user": p.get("user") or "",
            "name": name,
            "cmdline": p.get("cmdline") or "",
            "mem_used_mib": memory,
            "started_at": p.get("started_at"),
            "basis": basis,
            "peak_util_pct": stats.peak,
            "max_util_pct": limits.max_util_pct,
            "min_memory_mib": limits.min_memory_mib,
            "window_minutes": limits.window_minutes,
            "idle_since": (now - timedelta(minutes=limits.window_minutes)).isoformat(),
            "opened_at": now.isoformat(),  # a reopening replaces it: clearing reads only what came after
            "run_id": c.run_id,
        },
    )
