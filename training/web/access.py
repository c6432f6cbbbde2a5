"""Who sees and who changes a run: researchers see their projects' runs and change their own; staff all."""

from django.db.models import Q, QuerySet
from django.http import Http404

from training.models import Run, Sweep


def visible_runs(user) -> QuerySet[Run]:
    runs = Run.objects.all()
    if user.is_staff:
        return runs
    mine = Q(owner=user) | Q(project__in=user.projects.all())
    return runs.filter(mine)


def visible_sweeps(user) -> QuerySet[Sweep]:
    sweeps = Sweep.objects.all()
    if user.is_staff:
        return sweeps
    return sweeps.filter(Q(owner=user) | Q(project__in=user.projects.all()))


def can_change(user, thing: Run | Sweep) -> bool:
    return user.is_staff or thing.owner_id == user.pk


def visible_run_or_404(user, pk: int) -> Run:
    run = visible_runs(user).select_related("owner", "project", "sweep", "cancelled_by").filter(pk=pk).first()
    if run is None:
        raise Http404("No such run, or not one you may see.")
    return run
