"""What differs between the environment records (and hyperparameters) of runs, for the compare page."""

from __future__ import annotations

from typing import Any

from training.models import Run


def flat_record(run: Run) -> dict[str, Any]:
    """One run's facts as flat keys: hyperparameters, then the environment, each package its own key."""
    record: dict[str, Any] = {f"hyperparameter {key}": value for key, value in run.hyperparameters.items()}
    for key, value in run.environment.items():
        if key == "packages" and isinstance(value, dict):
            record.update({f"package {name}": version for name, version in value.items()})
        elif key in run.hyperparameters:
            continue  # the workload's report repeats its hyperparameters
        else:
            record[key] = " ".join(map(str, value)) if isinstance(value, list) else value
    return record


def differences(runs: list[Run]) -> list[tuple[str, list[Any]]]:
    """(key, one value per run) for every key whose values are not all the same; a missing key is None."""
    records = [flat_record(run) for run in runs]
    keys = sorted({key for record in records for key in record})
    rows = []
    for key in keys:
        values = [record.get(key) for record in records]
        if any(value != values[0] for value in values[1:]):
            rows.append((key, values))
    return rows
