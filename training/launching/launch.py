"""Launching a run: check everything before anything starts, then create it and queue one task per node.

The launch form, the JSON API and sweeps all come through ``check_launch`` and ``launch``.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import groupby
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from inventory.models import GPU, Node, Project
from reservations.availability import unfree
from reservations.models import Reservation
from training import run_cost, strategies
from training.choices import RunStatus
from training.dispatch.send import send_shares
from training.launching.commands import Program, check_program, given
from training.launching.params import LAUNCH_DEFAULTS, validate_hyperparameters, validate_params, validate_script_params
from training.launching.scheduled import BookedWindow, check_booking, check_long_enough
from training.launching.scripts import ScriptRefused, resolve_script
from training.models import COMMAND, SCRIPT, Run, RunNode
from training.node import run_as
from training.profiling import options as profile_options
from training.run_files import checkpoint_dirs
from training.workloads import WORKLOADS, spec_of


@dataclass
class LaunchRequest:
    """What a researcher asks for, as the form or the API parsed it."""

    user: Any
    workload: str
    strategy: str = LAUNCH_DEFAULTS["strategy"]
    name: str = ""
    project: Project | None = None
    script: str = ""
    gpus: list[GPU] = field(default_factory=list)
    node: Node | None = None
    processes: int | None = None
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    override: bool = False  # an admin launching over someone else's processes
    booking: str | None = None  # one of the user's bookings (its UUID): the run takes its GPUs and time
    placed_later: bool = False  # a sweep's run: its GPU is chosen, free, when it starts (training/sweeps/placing.py)
    free_checked: bool = False  # the caller refused GPUs that are not free itself (monitoring/health/burnin_launch.py)
    profiler: Any = None  # profiler options (training/profiling/options.py); None: off
    checkpoint_dir: str = ""  # below RUN_CHECKPOINT_DIR; empty: run-<uuid> there
    # The researcher's own command (workload "command"), checked by training/launching/commands.py.
    command: list[str] | None = None  # an argument list, run without a shell
    shell_line: str = ""  # or a shell line, run as bash -lc LINE
    workdir: str = ""
    variables: dict[str, str] = field(default_factory=dict)
    setup: str = ""
    env_kind: str = "fleet"
    env_ref: str = ""


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
    override: str = ""  # what an admin launched over, recorded on the run
    reservation: Reservation | None = None  # the booking of a run that waits for it to begin
    start_at: datetime | None = None
    profiler: dict[str, Any] = field(default_factory=dict)
    checkpoint_dir: str = ""
    resumed_from: Run | None = None  # training/launching/resume_run.py
    program: Program = field(default_factory=Program)  # a command run's command, environment and variables


def check_launch(request: LaunchRequest) -> tuple[LaunchPlan | None, dict[str, str]]:
    """A plan, or the reasons (by field) why this launch cannot start. Nothing is written."""
    errors: dict[str, str] = {}
    window = use_booking(request, errors)
    if errors:
        return None, errors
    project = check_project(request, errors)
    script = check_script(request, errors)
    nodes = check_placement(request, errors)
    program = check_command(request, errors)
    if request.workload not in (SCRIPT, COMMAND) and request.workload not in WORKLOADS:
        known = ", ".join([*WORKLOADS, SCRIPT, COMMAND])
        errors["workload"] = f"Unknown workload {request.workload!r}; choose one of {known}."
    if errors.keys() & {"workload", "script", "gpus", "node"}:
        return None, errors
    params = check_params(request, nodes, errors)
    profiler = check_profiler(request, params, errors)
    if script and params.get("strategy"):
        refused = strategies.get(params["strategy"]).check_script(script)
        if refused:
            errors["strategy"] = refused
    later = window is not None and window.later
    override = "" if later or request.placed_later or request.free_checked else check_free(request, errors)
    if window is not None and not errors:
        facts = {"workload": request.workload, "strategy": params["strategy"], "processes": params["processes"]}
        check_long_enough(window, {**facts, "epochs": params.get("epochs"), "gpus": window.gpus}, errors)
    if (problem := run_as.launch_problem(request.user)) is not None:
        errors["account"] = problem
    checkpoint_dir, problem = checkpoint_dirs.check_dir(request.checkpoint_dir)
    if problem:
        errors["checkpoint_dir"] = problem
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
        override=override,
        reservation=window.reservation if later else None,
        start_at=window.start if later else None,
        profiler=profiler,
        checkpoint_dir=checkpoint_dir,
        program=program,
    )
    return plan, {}


def use_booking(request: LaunchRequest, errors: dict) -> BookedWindow | None:
    """A launch on a booking runs on the booking's GPUs; giving other GPUs as well is an error."""
    if request.booking in (None, ""):
        return None
    window = check_booking(request.booking, request.user, errors)
    if window is None:
        return None
    if request.gpus and {gpu.pk for gpu in request.gpus} != {gpu.pk for gpu in window.gpus}:
        errors["gpus"] = "A run on a booking runs on the booking's GPUs; leave the GPUs empty."
        return None
    request.gpus, request.node = window.gpus, None
    return window


def check_command(request: LaunchRequest, errors: dict) -> Program:
    """A command run's clean command; any other run may not set the command fields."""
    if request.workload == COMMAND:
        return check_program(request, errors)
    for name in given(request):
        errors[name] = "A command, its environment and variables go only with the workload 'command'."
    return Program()


def default_name(request: LaunchRequest) -> str:
    what = request.script.rsplit("/", 1)[-1] if request.workload == SCRIPT else request.workload
    if request.workload == COMMAND:
        words = request.command or (request.shell_line or "").split()
        what = " ".join(words[:3])[:60] or COMMAND
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
    gpus = min(len(members) for _, members in nodes)
    name = str(request.strategy or "").strip().lower()
    strategy = strategies.get(name) if name in strategies.STRATEGIES else None
    spec = spec_of(request.workload)
    if strategy is not None:
        refused = strategy.check_gpus(gpus, [strategies.get(n) for n in spec.strategies])
        if refused:
            errors["gpus"] = refused
    processes = request.processes
    if processes in (None, ""):
        processes = strategy.default_processes(gpus) if strategy else LAUNCH_DEFAULTS["processes"]
    params = {**request.hyperparameters, "strategy": name, "processes": processes, "nodes": len(nodes)}
    devices = strategy.process_devices(gpus) if strategy else gpus
    cpus = nodes[0][0].cpu_count if len(nodes) == 1 else None
    if request.workload == COMMAND:
        clean, problems = validate_params(params, spec, "A command", gpus=devices, cpus=cpus)
    elif request.workload == SCRIPT:
        clean, problems = validate_script_params(params, gpus=devices, cpus=cpus)
    else:
        clean, problems = validate_hyperparameters(params, request.workload, gpus=devices, cpus=cpus)
    for field_name, message in problems.items():
        errors.setdefault(field_name, message)
    return clean


def check_profiler(request: LaunchRequest, params: dict[str, Any], errors: dict) -> dict[str, Any]:
    """The profiler's clean options ({} for off); a problem goes under ``profiler``."""
    spec = spec_of(request.workload)
    who = {SCRIPT: "A script", COMMAND: "A command"}.get(request.workload, request.workload)
    name = params.get("strategy")
    strategy = strategies.get(name) if name in strategies.STRATEGIES else None
    try:
        options = profile_options.check(request.profiler, spec, who, strategy)
        profile_options.check_length(options, spec, params)
    except profile_options.ProfilerRefused as refused:
        errors["profiler"] = str(refused)
        return {}
    return options


def check_free(request: LaunchRequest, errors: dict) -> str:
    """Refuse GPUs that others booked or whose memory others' processes hold (reservations/availability.py).

    An offline node is not refused: the run waits for it, and the run page says so. An admin may
    launch over others' processes; what was overridden is returned, to be recorded on the run.
    """
    if not request.gpus:
        return ""
    start = timezone.now()
    end = start + timedelta(seconds=settings.RUN_BOOKING_HORIZON_S)
    taken = unfree(request.gpus, request.user, start, end).values()
    booked = [message for why in taken for message in why.booking_messages()]
    in_use = [why.use_message() for why in taken if why.in_use_by]
    if request.override and not request.user.is_staff:
        errors["override"] = "Only an admin may launch on GPUs that someone else is using."
    overriding = request.override and request.user.is_staff
    refusals = booked + ([] if overriding else in_use)
    if refusals:
        errors["gpus"] = " ".join(refusals)
    return f"Launched by {request.user.get_username()} over: {' '.join(in_use)}" if overriding and in_use else ""


def launch(plan: LaunchPlan, sweep=None, waits_for_gpu: bool = False) -> Run:
    """Create the run (queued) and, once that is committed, queue one task per node.

    A sweep's run that ``waits_for_gpu`` is stored queued without GPUs; the sweep's dispatcher places it.
    """
    what = dict(
        owner=plan.user,
        project=plan.project,
        sweep=sweep,
        name=plan.name,
        workload=plan.workload,
        script=plan.script,
        strategy=plan.strategy,
        processes=plan.processes,
        hyperparameters=plan.hyperparameters,
        profiler=plan.profiler,
        **plan.program.fields(),
    )
    if waits_for_gpu:
        with transaction.atomic():
            return _stored(plan, **what)
    scheduled = plan.start_at is not None
    with transaction.atomic():
        run = _stored(
            plan,
            **what,
            status=RunStatus.SCHEDULED if scheduled else RunStatus.QUEUED,
            reservation=plan.reservation,
            start_at=plan.start_at,
            override=plan.override,
            resumed_from=plan.resumed_from,
        )
        run.gpus.set(plan.gpus)
        parts = [
            RunNode.objects.create(
                run=run,
                node=node,
                rank=rank,
                gpu_indexes=[gpu.index for gpu in members],
                sent_at=None if scheduled else timezone.now(),
                sends=0 if scheduled else 1,
            )
            for rank, (node, members) in enumerate(plan.nodes)
        ]
        if not scheduled:  # a scheduled run is queued by beat when its booking begins (training/launching/scheduled.py)
            transaction.on_commit(lambda: send_shares(run, parts))
    return run


def _stored(plan: LaunchPlan, **fields) -> Run:
    """The run created with its checkpoint directory named (``run-<uuid>`` unless the plan names one)."""
    run = Run(**fields)
    run.checkpoint_dir = plan.checkpoint_dir or run.files_name
    run.save(force_insert=True)
    return run


def launch_estimate(plan: LaunchPlan) -> run_cost.Estimate:
    epochs = plan.hyperparameters.get("epochs")
    return run_cost.estimate(plan.workload, plan.strategy, plan.processes, epochs, plan.gpus)
