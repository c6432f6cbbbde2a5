"""Who owns a GPU process: the one definition every reader of GPU processes uses.

A process the fleet started names its run (the agent reads FLEET_RUN_ID from the process and sends it;
the ingest believes it only for a run placed on that GPU and stores it as the process's ``run``), and
belongs to that run's owner. Any other process belongs to the researcher linked to its OS user (an
OsAccount, else a researcher of the same name), or to nobody known.

Readers look owners up by an *owner key*, ``run:<id>`` or the OS username (an OS username never holds
a colon), so a cache or a usage row keyed by it never mixes the two.
"""

from collections.abc import Iterable, Mapping

from django.contrib.auth import get_user_model

from inventory.models import OsAccount
from training.models import Run

RUN_PREFIX = "run:"


def run_key(run_id: int) -> str:
    return f"{RUN_PREFIX}{run_id}"


def believed_run(process: Mapping) -> int | None:
    """The run the ingest checked this process against (None for a process the fleet did not start)."""
    run = process.get("run")
    return run if type(run) is int else None


def owner_key(process: Mapping) -> str:
    """What this process's owner is looked up by: its run when believed, else its OS user ("" when unknown)."""
    run = believed_run(process)
    if run is not None:
        return run_key(run)
    user = process.get("user")
    return user if isinstance(user, str) else ""


def owners_by_os_username(usernames: set[str]) -> dict:
    """Map each OS username to a Django user: an explicit OsAccount first, then a user of the same name."""
    usernames = {name for name in usernames if name}
    found = {a.username: a.user for a in OsAccount.objects.filter(username__in=usernames).select_related("user")}
    missing = usernames - found.keys()
    if missing:
        for user in get_user_model().objects.filter(username__in=missing):
            found[user.username] = user
    return found


def owners_by_key(keys: Iterable[str]) -> dict:
    """Owner key → Django user, for the keys that have one: at most one query for runs, two for OS users."""
    keys = set(keys)
    run_ids = {int(key[len(RUN_PREFIX) :]) for key in keys if key.startswith(RUN_PREFIX)}
    found = {}
    if run_ids:
        runs = Run.objects.filter(pk__in=run_ids).select_related("owner")
        found.update({run_key(run.pk): run.owner for run in runs})
    found.update(owners_by_os_username({key for key in keys if not key.startswith(RUN_PREFIX)}))
    return found


class ProcessOwners:
    """The owners of a set of processes, loaded at once; ``of(process)`` answers for any of them."""

    def __init__(self, processes: Iterable[Mapping]):
        self.owners = owners_by_key({owner_key(process) for process in processes})

    def of(self, process: Mapping):
        return self.owners.get(owner_key(process))

    def users(self) -> list:
        return list(self.owners.values())


def owner_usernames(keys: Iterable[str]) -> dict[str, str]:
    """Owner key → the researcher's username, for those that map to one."""
    return {key: user.get_username() for key, user in owners_by_key(keys).items()}
