"""Reading what a user types: durations (8h), GPU counts (2xA100), dates, K=V pairs, PID@NODE.

Each reader is an argparse `type`: bad input is a usage error (exit 2) before anything is sent.
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime, timedelta

DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)d)?(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?\Z")
COUNT_OF_MODEL = re.compile(r"(\d+)\s*[x×]\s*(\S.*)\Z")
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def duration(text: str) -> timedelta:
    """4h, 30m, 1d, 1h30m: a positive length of time."""
    found = DURATION.match(text.strip().lower())
    if text.strip().startswith("-"):
        raise argparse.ArgumentTypeError(f"{text!r} is negative; give a length such as 4h, 90m or 1d.")
    if not found or not any(found.groups()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a length of time; give one such as 4h, 90m or 1d.")
    days, hours, minutes = (float(part or 0) for part in found.groups())
    length = timedelta(days=days, hours=hours, minutes=minutes)
    if length <= timedelta(0):
        raise argparse.ArgumentTypeError(f"{text!r} is no time at all; give a length such as 4h, 90m or 1d.")
    return length


def moment(text: str) -> datetime:
    """An ISO 8601 date or time (2026-11-22, 2026-11-22 14:00, with or without an offset); without an
    offset it is read in the user's own zone."""
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        example = "2026-11-22 or 2026-11-22T14:00"
        raise argparse.ArgumentTypeError(f"{text!r} is not a date; give one such as {example}.") from None
    return parsed if parsed.tzinfo else parsed.astimezone()


def count_of_model(text: str) -> tuple[int, str]:
    """2xA100 or "4x A100 80GB": how many GPUs of which model."""
    found = COUNT_OF_MODEL.match(text.strip())
    if not found:
        raise argparse.ArgumentTypeError(f"{text!r}: give COUNTxMODEL, such as 2xT4 or '4x A100 80GB'.")
    count = int(found.group(1))
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: the count must be at least 1.")
    return count, found.group(2).strip()


def positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number.") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least 1.")
    return number


def variable(text: str) -> tuple[str, str]:
    """K=V, a variable for the run's environment."""
    name, equals, value = text.partition("=")
    if not equals:
        raise argparse.ArgumentTypeError(f"{text!r} has no value; give NAME=VALUE.")
    if not VARIABLE.match(name):
        raise argparse.ArgumentTypeError(f"{name!r} is not a variable name (letters, digits and _).")
    return name, value


def parameter(text: str) -> tuple[str, object]:
    """K=V, a workload's hyperparameter; a number or true/false is sent as one."""
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"{text!r} has no value; give NAME=VALUE, such as epochs=4.")
    import json

    try:
        return name, json.loads(value)
    except ValueError:
        return name, value


def process(text: str) -> tuple[int, str]:
    """PID@NODE, as `fleet ps` prints it."""
    pid, at, node = text.partition("@")
    if not at or not pid.isdigit() or not node or int(pid) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give PID@NODE, as fleet ps shows it (4242@gpu-01).")
    return int(pid), node
