"""Run pages: the list, the launch form, a run live, cancel, comparison, sweeps."""

import json
import shlex

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from fleet.localtime import in_local_time
from inventory.models import GPU, Node
from monitoring.health.models import BurnIn
from training import environments, run_cost, strategies
from training.cancel import CancelRefused, request_cancel
from training.choices import RunStatus
from training.launching.launch import launch
from training.launching.resume_run import ResumeRefused, resume
from training.models import COMMAND, Run, RunLog, RunMetric
from training.profiling import downloads, tables
from training.run_files import artifacts, retention
from training.serializers import (
    RunLogSerializer,
    RunMetricSerializer,
    RunSerializer,
    SweepSerializer,
    checkpoint_facts,
)
from training.sweeps.placing import cancel_sweep
from training.sweeps.search import launch_sweep
from training.variables import shown
from training.web import efficiency, env_diff, node_environments
from training.web.access import can_change, visible_run_or_404, visible_runs, visible_sweeps
from training.web.forms import HYPERPARAMETERS, LaunchForm, SweepForm, variables_text
from training.web.gpu_picker import gpu_rows, history_per_epoch
from training.workloads import WORKLOADS, measures

LIST_TABS = {"mine": "My runs", "running": "Running", "project": "My projects"}
CHART_POINTS = 5000
LOG_TAIL = 300
COMPARE_MAX = 8


@in_local_time
def runs(request):
    show = request.GET.get("show") if request.GET.get("show") in LIST_TABS else "mine"
    found = visible_runs(request.user).select_related("owner", "project").prefetch_related("gpus__node")
    if show == "mine":
        found = found.filter(owner=request.user)
    elif show == "running":
        found = found.filter(status__in=RunStatus.unfinished())
    page = Paginator(found, 50).get_page(request.GET.get("page"))
    sweeps = visible_sweeps(request.user).select_related("owner")[:10]
    context = {"page": page, "show": show, "tabs": LIST_TABS, "sweeps": sweeps}
    return render(request, "training/runs.html", context)


@in_local_time
def launch_run(request):
    initial = {"project": default_project(request.user), **initial_from(request)}
    form = LaunchForm(request.POST or None, user=request.user, initial=initial)
    if request.method == "POST" and form.is_valid():
        run = launch(form.plan)
        messages.success(request, f"Run #{run.pk} is queued on {', '.join(n.hostname for n, _ in form.plan.nodes)}.")
        return redirect("training:run", pk=run.pk)
    return render(request, "training/launch.html", launch_context(request, form))


def default_project(user) -> int | None:
    projects = list(user.projects.values_list("pk", flat=True)[:2])
    return projects[0] if len(projects) == 1 else None


def initial_from(request) -> dict:
    """``?again=<id>`` fills the form with a visible run's settings."""
    pk = request.GET.get("again", "")
    if not pk.isdigit():
        return {}
    run = visible_runs(request.user).filter(pk=int(pk)).first()
    if run is None:
        return {}
    initial = {"name": run.name, "project": run.project_id, "workload": run.workload, "script": run.script}
    initial.update(strategy=run.strategy, processes=run.processes, gpus=list(run.gpus.values_list("pk", flat=True)))
    if run.workload == COMMAND:
        initial.update(command_initial(run))
    if run.profiler:
        initial.update(
            profile=True, **{f"profile_{key}": value for key, value in run.profiler.items() if key != "kind"}
        )
    return {**initial, **run.hyperparameters}


def command_initial(run: Run) -> dict:
    """Command mode filled with a command run's fields (its secret values are left for the owner to type again)."""
    return {
        "mode": COMMAND,
        "workload": next(iter(WORKLOADS)),
        "command": run.shell_line or shlex.join(run.command),
        "as_shell": bool(run.shell_line),
        "env_kind": run.env_kind,
        "env_ref": run.env_ref,
        "workdir": run.workdir,
        "variables": variables_text(run.variables),
        "setup": run.setup,
    }


def launch_context(request, form) -> dict:
    selected = {str(value) for value in (form["gpus"].value() or [])}
    return {
        "form": form,
        "gpu_rows": gpu_rows(request.user, selected),
        "hyperparameters": HYPERPARAMETERS,
        "workload_params": {name: list(spec.params) for name, spec in WORKLOADS.items()},
        "workload_defaults": {name: spec.defaults for name, spec in WORKLOADS.items()},
        "history": history_per_epoch(),
        "process_per_gpu": {name: strategies.get(name).process_per_gpu for name in strategies.STRATEGIES},
        "environments": {
            "offered": node_environments.offered(),
            "needs_ref": {name: environments.get(name).needs_ref for name in environments.names()},
            "host_of_node": {str(pk): hostname for pk, hostname in Node.objects.values_list("pk", "hostname")},
        },
    }


@in_local_time
def run_detail(request, pk: int):
    run = visible_run_or_404(request.user, pk)
    run = Run.objects.prefetch_related(
        "nodes__node", Prefetch("gpus", queryset=GPU.objects.select_related("node", "model", "state"))
    ).get(pk=run.pk)
    metrics = list(RunMetric.objects.filter(run=run).order_by("-id")[:CHART_POINTS])[::-1]
    logs = list(RunLog.objects.filter(run=run).order_by("-id")[:LOG_TAIL])[::-1]
    data = {
        "run": RunSerializer(run).data,
        "metrics": RunMetricSerializer(metrics, many=True).data,
        "logs": RunLogSerializer(logs, many=True).data,
        "socket": f"/ws/runs/{run.pk}/",
        "measures": measures(run.workload),
    }
    context = {
        "run": run,
        "measures": data["measures"],
        "burnins": run_burnins(run),
        "environment": environment_rows(run),
        "program": program_facts(run),
        "data": json.loads(json.dumps(data, default=str)),
        "can_change": can_change(request.user, run),
        "cost": run_cost.run_cost(run),
        "gpu_hours": run_cost.run_gpu_hours(run),
        "profiles": tables.profile_views(run),
        "efficiency": efficiency.run_efficiency(run),
        "raw_retention_hours": settings.FLEET_RAW_RETENTION_HOURS,
        "artifacts": list(run.artifacts.all()),
        "files_expire": retention.expires_at(run),
        "files_expired": retention.expired(run),
        "settings_retention_days": retention.days(),
        "checkpoint": checkpoint_facts(run),
        "can_resume": run.owner_id == request.user.pk and run.is_finished,
        "resumes": list(run.resumes.order_by("pk").values_list("pk", flat=True)),
    }
    return render(request, "training/run.html", context)


def program_facts(run: Run) -> dict | None:
    """What a run ran, as its page shows it: the command (or the shell line), where, and its variables with
    secret-looking values masked. None for a run that names no command of its own."""
    if not (run.command or run.shell_line):
        return None
    return {
        "command": run.shell_line or shlex.join(run.command),
        "is_shell": bool(run.shell_line),
        "environment": environments.get(run.env_kind).label if run.env_kind in environments.names() else run.env_kind,
        "env_ref": run.env_ref,
        "workdir": run.workdir,
        "setup": run.setup,
        "variables": sorted(shown(run.variables).items()),
    }


def run_burnins(run: Run):
    """A burn-in's health records, one per GPU in node and index order."""
    return BurnIn.objects.filter(run=run).select_related("gpu__node").order_by("gpu__node__hostname", "gpu__index")


def profile_file(request, pk: int, rank: int):
    """A profiled rank's trace or pstats file, for whoever may see the run."""
    return downloads.response(visible_run_or_404(request.user, pk), rank)


def artifact(request, pk: int, name: str):
    run = visible_run_or_404(request.user, pk)
    return artifacts.download(artifacts.of_run_or_404(run, name))


ENVIRONMENT_ORDER = (
    "python",
    "torch",
    "cuda",
    "cudnn",
    "driver",
    "gpu_models",
    "device",
    "world_size",
    "host",
    "node",
    "git_commit",
    "git_dirty",
)
CPU_BUILD = "none (CPU build)"


def environment_rows(run: Run) -> list[tuple[str, object]]:
    """The run's environment record, best-known keys first, without the hyperparameters it repeats."""
    skip = {*run.hyperparameters, "workload", "strategy"}
    record = {key: value for key, value in run.environment.items() if key not in skip}
    record = {key: record_value(key, value) for key, value in record.items()}
    if record.get("torch") and "cuda" in record and record["cuda"] is None:
        # A torch built without CUDA is a CPU build, not a missing fact.
        record["cuda"] = CPU_BUILD
        if record.get("cudnn") is None:
            record["cudnn"] = CPU_BUILD
    first = [(key, record.pop(key)) for key in ENVIRONMENT_ORDER if key in record]
    return first + sorted(record.items())


def record_value(key: str, value):
    """One value of an environment record as text (static/js/run.js writes live updates the same way)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key == "packages" and isinstance(value, dict):
        return f"{len(value)} installed (torch {value.get('torch') or 'N/A'})"
    if key == "packages" and isinstance(value, list):
        return f"{len(value)} installed"
    if key == "command" and isinstance(value, list):
        return shlex.join(map(str, value))
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return value


@require_POST
def cancel(request, pk: int):
    run = visible_run_or_404(request.user, pk)
    if not can_change(request.user, run):
        return HttpResponseForbidden("Only the owner of a run or an admin may cancel it.")
    try:
        request_cancel(run, request.user)
        messages.success(request, f"Run #{run.pk} is being cancelled.")
    except CancelRefused as refused:
        messages.error(request, str(refused))
    return redirect("training:run", pk=run.pk)


@require_POST
def resume_view(request, pk: int):
    run = visible_run_or_404(request.user, pk)
    try:
        resumed = resume(run, request.user)
    except ResumeRefused as refused:
        if refused.forbidden:
            return HttpResponseForbidden(str(refused))
        messages.error(request, f"Not resumed: {refused}")
        return redirect("training:run", pk=run.pk)
    step = run.checkpoint.get("step")
    messages.success(request, f"Run #{resumed.pk} continues #{run.pk}" + (f" from step {step}." if step else "."))
    return redirect("training:run", pk=resumed.pk)


@in_local_time
def compare(request):
    ids = [int(pk) for pk in request.GET.getlist("run") if pk.isdigit()][:COMPARE_MAX]
    chosen = list(visible_runs(request.user).filter(pk__in=ids).select_related("owner", "project"))
    series = [
        {
            "id": run.pk,
            "name": f"#{run.pk} {run.name}",
            "metrics": RunMetricSerializer(run.metrics.order_by("-id")[:CHART_POINTS][::-1], many=True).data,
        }
        for run in chosen
    ]
    keys = sorted({key for run in chosen for key in run.hyperparameters})
    context = {
        "runs": chosen,
        "keys": keys,
        "series": json.loads(json.dumps(series, default=str)),
        "differences": env_diff.differences(chosen),
    }
    return render(request, "training/compare.html", context)


@in_local_time
def new_sweep(request):
    form = SweepForm(request.POST or None, user=request.user, initial={"project": default_project(request.user)})
    if request.method == "POST" and form.is_valid():
        sweep = launch_sweep(form.request, form.plans)
        messages.success(request, f"Sweep {sweep.name}: {len(form.plans)} runs; they start as GPUs become free.")
        return redirect("training:sweep", pk=sweep.pk)
    selected = {str(value) for value in (form["gpus"].value() or [])}
    return render(request, "training/sweep_form.html", {"form": form, "gpu_rows": gpu_rows(request.user, selected)})


@in_local_time
def sweep_detail(request, pk: int):
    sweep = get_object_or_404(visible_sweeps(request.user).select_related("owner", "project", "gpu_model"), pk=pk)
    data = json.loads(json.dumps(SweepSerializer(sweep).data, default=str))
    data["socket"] = f"/ws/sweeps/{sweep.pk}/"
    compare_url = reverse("training:compare") + "?" + "&".join(f"run={run['id']}" for run in data["runs"][:COMPARE_MAX])
    context = {
        "sweep": sweep,
        "data": data,
        "compare_url": compare_url,
        "params": sorted(sweep.space),
        "can_change": can_change(request.user, sweep),
        "unfinished": sweep.runs.filter(status__in=RunStatus.unfinished()).exists(),
    }
    return render(request, "training/sweep.html", context)


@require_POST
def cancel_sweep_view(request, pk: int):
    sweep = get_object_or_404(visible_sweeps(request.user), pk=pk)
    if not can_change(request.user, sweep):
        return HttpResponseForbidden("Only the owner of a sweep or an admin may cancel it.")
    try:
        count = cancel_sweep(sweep, request.user)
        messages.success(request, f"Sweep {sweep.name} is cancelled; {count} unfinished run(s) are being stopped.")
    except CancelRefused as refused:
        messages.error(request, str(refused))
    return redirect("training:sweep", pk=sweep.pk)
