"""Which project (and run) a researcher's GPU time counts for.

A run on that GPU names its project first, then a booking of that GPU; otherwise a researcher in
several projects is attributed to the project they joined first.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from inventory.models import Project
from reservations.choices import ReservationStatus
from reservations.models import Reservation
from training.choices import RunStatus
from training.models import Run


def first_projects(user_ids: set[int]) -> dict[int, int]:
    """Map each user to the project they joined first (the oldest membership row)."""
    memberships = (
        Project.members.through.objects.filter(user_id__in=user_ids)
        .order_by("user_id", "id")
        .values_list("user_id", "project_id")
    )
    found: dict[int, int] = {}
    for user_id, project_id in memberships:
        found.setdefault(user_id, project_id)
    return found


@dataclass(frozen=True)
class Use:
    """A run or booking of one GPU by one user over a time span."""

    gpu_id: int
    user_id: int
    start: datetime
    end: datetime | None
    project_id: int | None
    run_id: int | None = None


class Attribution:
    """Runs and bookings of the given GPUs over [start, end), loaded with two queries."""

    def __init__(self, gpu_ids, user_ids: set[int], start: datetime, end: datetime):
        self.first = first_projects(user_ids)
        self.uses: dict[tuple[int, int], list[Use]] = {}
        for use in [*runs_on(gpu_ids, start, end), *bookings_on(gpu_ids, start, end)]:
            self.uses.setdefault((use.gpu_id, use.user_id), []).append(use)

    def of(
        self, gpu_id: int, user_id: int | None, start: datetime, end: datetime, run_id: int | None = None
    ) -> tuple[int | None, int | None]:
        """(project id, run id) for this user's time on this GPU within [start, end).

        A process known to belong to a run (``run_id``) counts for that run and its project.
        """
        if user_id is None:
            return None, None
        uses = self.uses.get((gpu_id, user_id), [])
        for use in uses:
            if run_id is not None and use.run_id == run_id:
                return use.project_id or self.first.get(user_id), run_id
        for use in uses:
            if use.start < end and (use.end is None or use.end > start) and (use.project_id or use.run_id):
                return use.project_id or self.first.get(user_id), use.run_id
        return self.first.get(user_id), None


def runs_on(gpu_ids, start: datetime, end: datetime) -> list[Use]:
    through = Run.gpus.through.objects.filter(
        Q(run__finished_at__isnull=True) | Q(run__finished_at__gt=start),
        gpu_id__any=list(gpu_ids),
        run__started_at__lt=end,
    ).exclude(run__status=RunStatus.QUEUED)
    fields = ("gpu_id", "run__owner_id", "run__started_at", "run__finished_at", "run__project_id", "run_id")
    return [Use(*row) for row in through.values_list(*fields)]


def bookings_on(gpu_ids, start: datetime, end: datetime) -> list[Use]:
    rows = Reservation.objects.filter(
        gpu_id__any=list(gpu_ids), start__lt=end, end__gt=start, project__isnull=False
    ).exclude(status=ReservationStatus.CANCELLED)
    return [Use(r.gpu_id, r.user_id, r.start, r.end, r.project_id) for r in rows]
