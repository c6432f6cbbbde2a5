"""What differs between the environment records (and hyperparameters) of runs, for the compare page."""

from __future__ import annotations

import re
from typing import Any

from training.models import Run
from training.node.commands import rendezvous_id, script_args

# A multi-node run's rendezvous endpoint (host:port, a fresh port each run) follows this flag.
ENDPOINT_FLAG = "--rdzv-endpoint"


def command_shape(run: Run, argv: list) -> str:
    """The run's command without what makes every run's differ by construction: its hyperparameter flags
    (compared as hyperparameters), its rendezvous id and port. What remains differs only when the launcher,
    interpreter, program or strategy flags do."""
    words = [str(word) for word in argv]
    flags = script_args(run.hyperparameters)
    for at in range(len(words) - len(flags) + 1):
        if flags and words[at : at + len(flags)] == flags:
            words[at : at + len(flags)] = ["<hyperparameters>"]
            break
    words = [word.replace(rendezvous_id(run), "fleet-run-<id>") for word in words]
    for at, word in enumerate(words[:-1]):
        if word == ENDPOINT_FLAG:
            words[at + 1] = re.sub(r":\d+$", ":<port>", words[at + 1])
    return " ".join(words)


def flat_record(run: Run) -> dict[str, Any]:
    """One run's facts as flat keys: hyperparameters, then the environment, each package its own key."""
    record: dict[str, Any] = {f"hyperparameter {key}": value for key, value in run.hyperparameters.items()}
    for key, value in run.environment.items():
        if key == "packages" and isinstance(value, dict):
            record.update({f"package {name}": version for name, version in value.items()})
        elif key == "command" and isinstance(value, list):
            record["command (hyperparameters aside)"] = command_shape(run, value)
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
