"""What the CLI prints: plain tables for people, JSON for scripts, times in the user's own zone, named.

A value the server does not know (null) prints as "N/A", never as 0, as on the pages.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime

NA = "N/A"


def emit_json(data: object) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def table(rows: list[list[object]], header: list[str], empty: str = "Nothing to show.") -> None:
    """Columns padded to their widest cell; the last column is left ragged."""
    if not rows:
        print(empty)
        return
    cells = [[cell_text(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(len(header))]
    for row in [header, *cells]:
        padded = [text.ljust(width) for text, width in zip(row[:-1], widths, strict=False)]
        print("  ".join([*padded, row[-1]]).rstrip())


def fields(pairs: list[tuple[str, object]]) -> None:
    """Name: value lines, for one object."""
    width = max(len(name) for name, _ in pairs)
    for name, value in pairs:
        print(f"{name + ':':<{width + 1}} {cell_text(value)}")


def cell_text(value: object) -> str:
    if value is None:
        return NA
    return " ".join(str(value).split())


def local_time(value: str | float | None) -> str | None:
    """An ISO 8601 time or UNIX seconds, in the user's zone with the zone named: 2026-11-22 15:00 CET."""
    if value in (None, ""):
        return None
    if isinstance(value, int | float):
        moment = datetime.fromtimestamp(value).astimezone()
    else:
        moment = datetime.fromisoformat(value).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M %Z")


def gib(mib: float | None) -> str | None:
    return None if mib is None else f"{mib / 1024:.1f}"


def percent(value: float | None) -> str | None:
    return None if value is None else f"{value:.0f}%"


def note(message: str) -> None:
    """A line for the person at the terminal, kept out of what scripts read."""
    print(message, file=sys.stderr, flush=True)
