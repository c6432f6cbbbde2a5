"""Resuming a run: a new run with the same workload, placement and hyperparameters that continues from the
old one's last checkpoint (its step counter and loss curve carry on from there).

Everything is checked before anything is queued; the launch itself goes through training/launching/launch.py.
"""

import copy

from django.db import transaction

from training.launching.commands import COMMAND_FIELDS
from training.launching.launch import LaunchRequest, check_launch, launch
from training.models import COMMAND, Run, RunMetric
from training.run_files import checkpoint_dirs

# Workloads a resume makes no sense for, and why.
NOT_RESUMABLE = {
    "burnin": (
        "A burn-in is a measurement of the GPUs as they are now, not training to continue: "
        "launch a new burn-in instead of resuming this one."
    ),
}


class ResumeRefused(Exception):
    """The run cannot be resumed; ``forbidden`` tells a permission refusal from a state one."""

    def __init__(self, message: str, forbidden: bool = False, errors: dict | None = None):
        super().__init__(message)
        self.forbidden = forbidden
        self.errors = errors or {}


def check_resumable(run: Run, user) -> None:
    """Raise ResumeRefused when this user may not resume this run now."""
    if run.owner_id != user.pk:
        raise ResumeRefused("Only the owner of a run may resume it.", forbidden=True)
    if not run.is_finished:
        raise ResumeRefused("The run has not ended; cancel it first (it saves a checkpoint as it stops).")
    if run.workload in NOT_RESUMABLE:
        raise ResumeRefused(NOT_RESUMABLE[run.workload])
    if checkpoint_dirs.inside_root(checkpoint_dirs.run_dir(run)) is None:
        raise ResumeRefused("The run's checkpoint directory is outside RUN_CHECKPOINT_DIR.")
    if not checkpoint_dirs.files(run):
        raise ResumeRefused(f"Run #{run.pk} has no checkpoint to continue from (none saved, or deleted by retention).")


def resume(run: Run, user) -> Run:
    """Launch the continuation of ``run``; raises ResumeRefused (with the launch's errors by field) first."""
    check_resumable(run, user)
    part = run.nodes.select_related("node").order_by("rank").first()
    request = LaunchRequest(
        user=user,
        workload=run.workload,
        strategy=run.strategy,
        name=f"{run.name} (resumed)"[:100],
        project=run.project,
        script=run.script,
        gpus=list(run.gpus.select_related("node", "model")),
        node=part.node if part and not run.gpus.exists() else None,
        processes=run.processes,
        hyperparameters=dict(run.hyperparameters),
        **program_of(run),
    )
    plan, errors = check_launch(request)
    if errors:
        raise ResumeRefused(" ".join(errors.values()), errors=errors)
    plan.resumed_from = run
    with transaction.atomic():
        resumed = launch(plan)
        carry_curve(run, resumed)
    return resumed


def program_of(run: Run) -> dict:
    """A command run's command fields, for a launch that repeats it (a built-in workload fills in its own)."""
    if run.workload != COMMAND:
        return {}
    return {name: copy.deepcopy(getattr(run, name)) for name in COMMAND_FIELDS}


def carry_curve(old: Run, new: Run) -> None:
    """The old run's progress up to its checkpoint, so the new run's curves continue rather than restart."""
    step = old.checkpoint.get("step")
    points = old.metrics.order_by("id")
    if isinstance(step, int):
        points = points.filter(step__lte=step)
    RunMetric.objects.bulk_create(
        RunMetric(
            run=new,
            ts=point.ts,
            step=point.step,
            epoch=point.epoch,
            loss=point.loss,
            accuracy=point.accuracy,
            samples_per_s=point.samples_per_s,
        )
        for point in points
    )
