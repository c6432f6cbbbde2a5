"""Launching a run: check everything before anything starts, then create it and queue one task per node.

The launch form, the JSON API and sweeps all come through ``check_launch`` and ``launch``.
"""

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import groupby
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fleet.celery import node_queue
from fleet.choices import RunStatus, RunStrategy
from fleet.models import GPU, Node, Project
from training import costs
from training.bookings import booked_by_others
from training.models import SCRIPT, Run, RunNode
from training.params import CHECKS, LAUNCH_DEFAULTS, LAUNCH_FIELDS, validate_hyperparameters
from training.scripts import ScriptRefused, resolve_script
from training.workloads import TRAINING_PARAMS, WORKLOADS

log = logging.getLogger(__name__)

SCRIPT_STRATEGIES = (RunStrategy.SINGLE, RunStrategy.DDP)
SCRIPT_DEFAULTS: dict[str, Any] = {"epochs": 10, "batch_size": 32, "lr": 0.001, "optimizer": "adam", "seed": 0}


@dataclass
class LaunchRequest:
    """What a researcher asks for, as the form or the API parsed it."""

    user: Any
    workload: str
    strategy: str = RunStrategy.SINGLE
    name: str = ""
    project: Project | None = None
    script: str = ""
    gpus: list[GPU] = field(default_factory=list)
    node: Node | None = None
    processes: int | None = None
    hyperparameters: dict[str, Any] = field(default_factory=dict)


@dataclass
class LaunchPlan:
    """A checked launch: every value clean, the nodes and their GPUs decided."""

    user: Any
    name: str
    project: Project | None
    workload: str
    script: str
    strategy: str
    processes: int
    hyperparameters: dict[str, Any]
    gpus: list[GPU]
    nodes: list[tuple[Node, list[GPU]]]


def check_launch(request: LaunchRequest) -> tuple[LaunchPlan | None, dict[str, str]]:
    """A plan, or the reasons (by field) why this launch cannot start. Nothing is written."""
    errors: dict[str, str] = {}
    project = check_project(request, errors)
    script = check_script(request, errors)
    nodes = check_placement(request, errors)
    if request.workload != SCRIPT and request.workload not in WORKLOADS:
        errors["workload"] = f"Unknown workload {request.workload!r}; choose one of {', '.join(WORKLOADS)}."
    if errors.keys() & {"workload", "script", "gpus", "node"}:
        return None, errors
    params = check_params(request, nodes, errors)
    check_bookings(request, errors)
    if errors:
        return None, errors
    plan = LaunchPlan(
        user=request.user,
        name=request.name.strip()[:100] or default_name(request),
        project=project,
        workload=request.workload,
        script=script,
        strategy=params.pop("strategy"),
        processes=params.pop("processes"),
        hyperparameters={k: v for k, v in params.items() if k != "nodes"},
        gpus=list(request.gpus),
        nodes=nodes,
    )
    return plan, {}


def default_name(request: LaunchRequest) -> str:
    what = request.script.rsplit("/", 1)[-1] if request.workload == SCRIPT else request.workload
    return f"{what} · {request.strategy}"


def check_project(request: LaunchRequest, errors: dict) -> Project | None:
    user, project = request.user, request.project
    mine = Project.objects.filter(members=user)
    if project is None:
        if user.is_staff or not mine.exists():
            return None
        if mine.count() == 1:
            return mine.get()
        errors["project"] = "Choose one of your projects."
        return None
    if not user.is_staff and not mine.filter(pk=project.pk).exists():
        errors["project"] = f"You are not a member of {project.name}."
    return project


def check_script(request: LaunchRequest, errors: dict) -> str:
    if request.workload != SCRIPT:
        if request.script:
            errors["script"] = "A script path goes only with the workload 'script'."
        return ""
    try:
        return str(resolve_script(request.script))
    except ScriptRefused as refused:
        errors["script"] = str(refused)
        return ""


def check_placement(request: LaunchRequest, errors: dict) -> list[tuple[Node, list[GPU]]]:
    """The nodes of the run with their GPUs, in hostname order (the first serves a rendezvous)."""
    gpus = sorted(request.gpus, key=lambda gpu: (gpu.node.hostname, gpu.index))
    if len({gpu.pk for gpu in gpus}) != len(gpus):
        errors["gpus"] = "A GPU is listed twice."
        return []
    if not gpus:
        if request.node is None:
            errors["gpus"] = "Choose GPUs, or a node to run on its CPUs."
            return []
        return [(request.node, [])]
    nodes = [(node, list(members)) for node, members in groupby(gpus, key=lambda gpu: gpu.node)]
    if request.node is not None and [node for node, _ in nodes] != [request.node]:
        errors["node"] = "The chosen GPUs are not all on the chosen node; leave the node empty."
    return nodes


def check_params(request: LaunchRequest, nodes, errors: dict) -> dict[str, Any]:
    per_node = [len(members) for _, members in nodes]
    gpus = min(per_node)
    strategy = str(request.strategy or "").strip().lower()
    if gpus > 1 and strategy in (RunStrategy.SINGLE, RunStrategy.HOGWILD):
        errors["gpus"] = f"A {RunStrategy(strategy).label.lower()} run uses one GPU; choose one, or DDP."
    processes = request.processes
    if processes in (None, ""):
        processes = gpus if strategy == RunStrategy.DDP and gpus else LAUNCH_DEFAULTS["processes"]
    params = {**request.hyperparameters, "strategy": strategy, "processes": processes, "nodes": len(nodes)}
    # Hogwild workers share one device, so cores, not GPUs, bound how many there are.
    devices = 0 if strategy == RunStrategy.HOGWILD else gpus
    cpus = nodes[0][0].cpu_count if len(nodes) == 1 else None
    if request.workload == SCRIPT:
        clean, problems = validate_script_params(params, gpus=devices, cpus=cpus)
    else:
        clean, problems = validate_hyperparameters(params, request.workload, gpus=devices, cpus=cpus)
    for name, message in problems.items():
        errors.setdefault(name, message)
    return clean


def validate_script_params(params: dict, gpus: int, cpus: int | None) -> tuple[dict, dict]:
    """The built-in workloads' checks for a user script, which takes the same flags."""
    from training.workloads import Workload

    spec = Workload("", "", SCRIPT_STRATEGIES, None, TRAINING_PARAMS, SCRIPT_DEFAULTS)
    clean, errors = {}, {}
    for name in params:
        if name not in (*TRAINING_PARAMS, *LAUNCH_FIELDS):
            errors[name] = f"A script takes no parameter {name!r}."
    for name in (*TRAINING_PARAMS, *LAUNCH_FIELDS):
        value = params.get(name)
        if value in (None, ""):
            value = {**SCRIPT_DEFAULTS, **LAUNCH_DEFAULTS}[name]
        try:
            clean[name] = CHECKS[name](value, spec=spec, gpus=gpus, cpus=cpus or 1)
        except ValueError as error:
            errors[name] = str(error)
    if clean.get("strategy") and clean["strategy"] not in SCRIPT_STRATEGIES:
        errors["strategy"] = "A script runs as single or ddp."
    if clean.get("strategy") == RunStrategy.SINGLE and clean.get("processes", 1) > 1:
        errors.setdefault("processes", "A single-process run has exactly 1 process; choose DDP for more.")
    if clean.get("nodes", 1) > 1 and clean.get("strategy") != RunStrategy.DDP:
        errors.setdefault("nodes", "Only DDP runs span several nodes.")
    return {k: v for k, v in clean.items() if k not in errors}, errors


def check_bookings(request: LaunchRequest, errors: dict) -> None:
    if not request.gpus:
        return
    start = timezone.now()
    end = start + timedelta(seconds=settings.RUN_BOOKING_HORIZON_S)
    conflicts = booked_by_others(request.gpus, request.user, start, end)
    if conflicts:
        errors["gpus"] = " ".join(conflicts)


def launch(plan: LaunchPlan, sweep=None) -> Run:
    """Create the run (queued) and, once that is committed, queue one task per node."""
    with transaction.atomic():
        run = Run.objects.create(
            owner=plan.user,
            project=plan.project,
            sweep=sweep,
            name=plan.name,
            workload=plan.workload,
            script=plan.script,
            strategy=plan.strategy,
            processes=plan.processes,
            hyperparameters=plan.hyperparameters,
        )
        run.gpus.set(plan.gpus)
        parts = [
            RunNode.objects.create(run=run, node=node, rank=rank, gpu_indexes=[gpu.index for gpu in members])
            for rank, (node, members) in enumerate(plan.nodes)
        ]
        transaction.on_commit(lambda: queue_parts(run, parts))
    return run


def queue_parts(run: Run, parts: list[RunNode]) -> None:
    from training.tasks import run_on_node

    try:
        for part in parts:
            run_on_node.apply_async(args=[part.pk], queue=node_queue(part.node.hostname))
    except Exception as error:  # the broker is down: say so on the run rather than leave it queued forever
        log.exception("could not queue run %s", run.pk)
        Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
            status=RunStatus.FAILED, finished_at=timezone.now(), error=f"Could not queue the run: {error}"
        )


def launch_estimate(plan: LaunchPlan) -> costs.Estimate:
    epochs = plan.hyperparameters.get("epochs")
    return costs.estimate(plan.workload, plan.strategy, plan.processes, epochs, plan.gpus)
