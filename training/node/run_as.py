"""Whose OS account a run's processes run under: the researcher's own where the node allows it.

A node worker running as root starts a run's processes as the owner's linked OS account (fleet's
OsAccount): its uid, gid, groups and HOME. Otherwise (the worker is not root, the owner has no linked
account, or the account does not exist on the node) RUN_ACCOUNT_FALLBACK decides: ``worker`` runs them
as the node worker's own account, ``refuse`` fails the run with the reason before anything starts.
"""

import os
import pwd
import socket
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from inventory.models import OsAccount

FALLBACKS = ("worker", "refuse")


class AccountRefused(Exception):
    """The run may not start under any account this node worker can give it."""


@dataclass(frozen=True)
class Account:
    """An OS account a run's processes switch to."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str

    @classmethod
    def named(cls, name: str) -> "Account":
        entry = pwd.getpwnam(name)
        return cls(entry.pw_name, entry.pw_uid, entry.pw_gid, tuple(os.getgrouplist(name, entry.pw_gid)), entry.pw_dir)

    def env(self) -> dict[str, str]:
        return {"HOME": self.home, "USER": self.name, "LOGNAME": self.name}


def linked_account(user) -> str | None:
    """The researcher's OS account name (the first linked one), or None."""
    return OsAccount.objects.filter(user=user).order_by("pk").values_list("username", flat=True).first()


def refuses() -> bool:
    return settings.RUN_ACCOUNT_FALLBACK == "refuse"


def launch_problem(user) -> str | None:
    """Why a launch must be refused before it is queued: only when refusing and the owner has no linked account."""
    if refuses() and linked_account(user) is None:
        return (
            f"Runs here start only under the researcher's own OS account, and {user.get_username()} has none "
            "linked: ask an admin to link your OS account (OS accounts in the admin)."
        )
    return None


def run_account(owner) -> Account | None:
    """The account to run the owner's processes as on this node; None for the node worker's own.

    Raises AccountRefused (with a message for the researcher) when RUN_ACCOUNT_FALLBACK is ``refuse``
    and the owner's account cannot be used here.
    """
    name = linked_account(owner)
    host = socket.gethostname()
    worker = pwd.getpwuid(os.geteuid()).pw_name
    if name is not None and name == worker:
        return None
    if name is None:
        reason = f"{owner.get_username()} has no linked OS account"
    elif os.geteuid() != 0:
        reason = f"the node worker on {host} runs as {worker}, not root, so it cannot switch to {name}"
    else:
        try:
            return Account.named(name)
        except KeyError:
            reason = f"the OS account {name} does not exist on {host}"
    if refuses():
        raise AccountRefused(f"Not started: {reason} (RUN_ACCOUNT_FALLBACK=refuse).")
    return None


def run_dir(run) -> Path:
    """Where the run's own directory is on this node: named after its UUID, so no other run ever had it."""
    return Path(settings.RUN_OUTPUT_DIR) / run.files_name


def output_dir(run, account: Account | None) -> Path:
    """The run's own writable directory on this node (FLEET_OUTPUT_DIR), owned by the account it runs as."""
    path = run_dir(run)
    path.mkdir(parents=True, exist_ok=True)
    if account is not None:
        os.chown(path, account.uid, account.gid)
    path.chmod(0o750)
    return path
