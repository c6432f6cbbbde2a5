"""Check the runs GPU processes claim: believed only for a run placed on that very GPU, flagged otherwise.

An agent names the run of each process the fleet started (the process's FLEET_RUN_ID). A node could
be wrong or lie, so a claim is checked against the run's placement before anyone relies on it: a
believed claim becomes the process's ``run`` (training.owners then gives the process to the run's
owner); any other claim becomes ``unverified_run``, which owns nothing and is shown as a warning.

One query per flush, and only when some process claims a run: the placements of the claimed runs.
"""

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from training.models import Run

log = logging.getLogger(__name__)
# Refused claims already logged, so a node that keeps sending one logs it once (bounded).
_logged: set[tuple[int, int, int]] = set()
LOGGED_MAX = 10_000


@dataclass(frozen=True)
class RefusedClaim:
    """A process that named a run not placed on its GPU."""

    gpu_id: int
    pid: int
    run_id: int


def placements(run_ids: set[int]) -> set[tuple[int, int]]:
    """(run id, GPU id) for every GPU the given runs are placed on."""
    through = Run.gpus.through.objects.filter(run_id__in=run_ids)
    return set(through.values_list("run_id", "gpu_id"))


def check_claims(samples: Iterable[tuple]) -> list[RefusedClaim]:
    """Turn each process's ``claimed_run`` into ``run`` or ``unverified_run``; returns the refused ones.

    ``samples`` are (GPURef, Sample) pairs; their process dicts are changed in place, and a second pass
    over the same dicts (a retried flush) changes nothing.
    """
    claimed = [
        (ref.id, process) for ref, sample in samples for process in sample.processes or () if "claimed_run" in process
    ]
    if not claimed:
        return []
    placed = placements({process["claimed_run"] for _, process in claimed})
    refused = []
    for gpu_id, process in claimed:
        run_id = process.pop("claimed_run")
        if (run_id, gpu_id) in placed:
            process["run"] = run_id
        else:
            process["unverified_run"] = run_id
            refused.append(RefusedClaim(gpu_id, process["pid"], run_id))
    note(refused)
    return refused


def note(refused: list[RefusedClaim]) -> None:
    for claim in refused:
        key = (claim.gpu_id, claim.pid, claim.run_id)
        if key in _logged:
            continue
        if len(_logged) >= LOGGED_MAX:
            _logged.clear()
        _logged.add(key)
        log.warning(
            "pid %s on GPU id %s claims run %s, which is not placed on that GPU: not believed",
            claim.pid,
            claim.gpu_id,
            claim.run_id,
        )
