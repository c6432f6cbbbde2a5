"""The GPUs' latest state as the alert rules read it: plain rows, not model instances.

An evaluation reads every GPU of the fleet (the idle rule those with processes, the health rule those
reporting); building a thousand GPU instances with their nodes cost more than the queries that judge them.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from monitoring.storage import latest

COLUMNS = (
    "id",
    "uuid",
    "index",
    "node_id",
    "node__hostname",
    "last_sample_at",
    "temp_c",
    "clocks_event_reasons",
    "ecc_volatile",
    "processes",
)


@dataclass(frozen=True, slots=True)
class GpuRow:
    """One GPU's identity and latest state: what a rule needs to judge it and to word its alert."""

    id: int
    uuid: str
    index: int
    node_id: int
    hostname: str
    last_sample_at: datetime | None
    temp_c: float | None
    clocks_event_reasons: int | None
    ecc_volatile: int | None
    processes: list | None = None


def gpu_rows(gpus: QuerySet, processes: bool = True) -> list[GpuRow]:
    """The rows of a GPU queryset, in its order, read with one query; without `processes`, none are read."""
    return [GpuRow(*row) for row in latest.values_list(gpus, *(COLUMNS if processes else COLUMNS[:-1]))]
