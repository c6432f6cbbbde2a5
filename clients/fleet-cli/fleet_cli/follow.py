"""logs [-f] and waiting for a run to end: the log read with the API's `?after=` cursor, so no line is
printed twice and a dropped connection resumes after the last line printed.

The command line keeps to the standard library, which has no websocket client, so it polls (the run's
websocket takes a token too, docs/api.md); the cursor makes a poll cheap (only new lines) and exact.
"""

from __future__ import annotations

import sys
import time

from .client import Api, Refused, Unreachable, logged_in
from .output import note

FINISHED = ("succeeded", "failed", "cancelled", "lost")
POLL_S = 0.5
RETRY_MAX_S = 10.0  # the longest wait between tries while the server cannot be reached


def logs(args) -> int:
    api = logged_in()
    if not args.follow:
        print_lines(api, args.run, 0)
        return 0
    return follow(api, args.run)


def follow(api: Api, run_id: int) -> int:
    """Print the run's log until it ends; 0 when it succeeded, 1 otherwise. Ctrl-C detaches."""
    try:
        run = follow_to_end(api, run_id)
    except KeyboardInterrupt:
        note(f"\nDetached; run #{run_id} goes on. Reattach with: fleet logs {run_id} -f")
        return 130
    note(ending(run))
    return 0 if run["status"] == "succeeded" else 1


def follow_to_end(api: Api, run_id: int) -> dict:
    last, delay = 0, POLL_S
    while True:
        try:
            run = api.get(f"/api/runs/{run_id}/")
            last = print_lines(api, run_id, last)
        except Unreachable as lost:
            note(f"{lost} Trying again in {delay:.0f} s.")
            time.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)
            continue
        delay = POLL_S
        if run["status"] in FINISHED:
            return run  # its lines were all stored before it ended, and read just now
        time.sleep(POLL_S)


def print_lines(api: Api, run_id: int, after: int) -> int:
    """Print every line after id `after`; the last id printed."""
    while True:
        rows = api.get(f"/api/runs/{run_id}/logs/", after=after)
        for row in rows:
            prefix = f"[node {row['node_rank']}] " if row.get("node_rank") else ""
            sys.stdout.write(f"{prefix}{row['line']}\n")
            after = row["id"]
        sys.stdout.flush()
        if len(rows) < 1000:  # the API's page: a full one may have more behind it
            return after


def ending(run: dict) -> str:
    """One line: how the run ended and its own exit status."""
    said = f"Run #{run['id']} {run['status']}"
    if run.get("exit_code") is not None:
        said += f" (exit status {run['exit_code']})"
    return f"{said}: {run['error']}" if run.get("error") else f"{said}."


def wait_until_ended(api: Api, run_id: int, grace_s: float | None = None) -> dict:
    """The run once it has ended; the cancel grace period and a margin are waited at most."""
    deadline = time.monotonic() + (grace_s or 10) + 60
    while True:
        run = api.get(f"/api/runs/{run_id}/")
        if run["status"] in FINISHED:
            return run
        if time.monotonic() > deadline:
            raise Refused(f"Run #{run_id} is still {run['status']}; see fleet show {run_id}.")
        time.sleep(POLL_S)
