"""What a digest says, the same for every channel: its held alert updates and the person's underused GPUs.

`build` makes the content once; the email renders it as plain text (`body`), a webhook as JSON with a
Slack-compatible `text` (monitoring/notify/transports/webhook/payload.py).
"""

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone
from django.utils.dateformat import format as date_format

from fleet.localtime import when
from monitoring.costs.idle_report import UnderusedProcess
from monitoring.notify.messages import alert_url, headline

UNDERUSED_HEAD = "Underused GPUs (idle for whole windows between bursts of work)"


@dataclass(frozen=True)
class Digest:
    """Held notifications of one person and channel, oldest first, and their underused GPUs over a period."""

    notifications: list
    underused: list[UnderusedProcess]
    why: str  # "hourly digest", "held during your quiet hours"
    since: datetime | None = None
    until: datetime | None = None

    @property
    def subject(self) -> str:
        parts = [counted(len(self.notifications), "alert update")] if self.notifications else []
        parts += [counted(len(self.underused), "underused GPU")] if self.underused else []
        return f"{', '.join(parts)} ({self.why})"

    @property
    def message_id(self) -> str:
        if self.notifications:
            return f"digest_{self.notifications[0].pk}"
        return f"underused_{self.underused[0].owner}_{int(self.until.timestamp())}"


def counted(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def build(notifications: list, underused: list[UnderusedProcess], why: str, since=None, until=None) -> Digest:
    return Digest(list(notifications), list(underused), why, since, until)


def line(notification) -> str:
    event = notification.event
    return f"{when(event.created)}: {headline(event, len(notification.also))}"


def period(digest: Digest) -> str:
    if digest.since is None or digest.until is None:
        return ""
    start, end = timezone.localtime(digest.since), timezone.localtime(digest.until)
    return f" from {date_format(start, 'D j M H:i')} to {date_format(end, 'D j M H:i T')}"


def underused_line(u: UnderusedProcess) -> str:
    cost = f", ${u.idle_cost}" if u.idle_cost is not None else ""
    return (
        f"{u.name} (pid {u.pid}) on {u.node} GPU {u.gpu_index}: {u.idle_hours:.1f} idle GPU-hours "
        f"in {u.stretches} stretches{cost}"
    )


def body(digest: Digest) -> str:
    """Plain text: one line per held notification with its link, then the underused GPUs."""
    lines = [digest.subject, ""]
    for note in digest.notifications:
        lines += [f"- {line(note)}", f"  {alert_url(note.event)}"]
    if digest.underused:
        lines += ["", f"{UNDERUSED_HEAD}{period(digest)}:"] + [f"- {underused_line(u)}" for u in digest.underused]
    return "\n".join(lines) + "\n"
