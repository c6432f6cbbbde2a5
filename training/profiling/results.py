"""The node worker brings a profiled run's results home: each rank's summary and trace into the database.

The files sit in the run's directory on the node (``RUN_OUTPUT_DIR/run-<uuid>/profile/rank-<rank>/``),
written by the run's own processes, so they are read as untrusted: no symbolic links followed, sizes
bounded, the summary's rows checked field by field. The web server then serves them from the database,
wherever the node is, and the node's copy of a stored rank is removed.
"""

import gzip
import json
import logging
import math
import os
import re
import stat
from pathlib import Path

from django.conf import settings

from training.models import Run, RunProfile
from training.profiling import files

log = logging.getLogger(__name__)

RANK_DIR = re.compile(r"rank-(\d{1,6})")
MAX_SUMMARY_BYTES = 1_000_000
MAX_ROWS = 50
MAX_NAME = 500
FILES = {"torch": files.TRACE, "cprofile": files.PSTATS}


class Unreadable(Exception):
    """A rank's profile is missing, too large or malformed; the message says which."""


def profile_dir(run: Run) -> Path:
    return Path(settings.RUN_OUTPUT_DIR) / run.files_name / files.DIR


def collect(run: Run) -> list[str]:
    """Store every rank's profile found on this node; returns one line per rank for the run's log."""
    if not run.profiler:
        return []
    root = profile_dir(run)
    if not _is_real_dir(root):
        return ["[fleet] the profiler wrote nothing on this node (the run ended before its window?)"]
    lines = []
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        match = RANK_DIR.fullmatch(entry.name)
        if not match or not entry.is_dir(follow_symlinks=False):
            continue
        rank = int(match.group(1))
        try:
            lines.append(store(run, rank, Path(entry.path)))
        except Unreadable as problem:
            lines.append(f"[fleet] profile of rank {rank} not kept: {problem}")
    return lines


def store(run: Run, rank: int, folder: Path) -> str:
    kind = run.profiler.get("kind", "torch")
    try:
        raw_summary = json.loads(_read(folder / files.SUMMARY, MAX_SUMMARY_BYTES))
    except (ValueError, RecursionError):
        raise Unreadable("summary.json is not JSON") from None
    summary = clean_summary(raw_summary, kind)
    limit = settings.RUN_PROFILE_MAX_BYTES
    note, data, size = "", b"", 0
    try:
        raw = _read(folder / FILES[kind], limit)
        data, size = gzip.compress(raw, compresslevel=6), len(raw)
    except Unreadable as problem:
        note = str(problem)
    RunProfile.objects.update_or_create(
        run=run, rank=rank, defaults={"kind": kind, "summary": summary, "data": data, "size": size, "note": note}
    )
    if data:
        remove_stored(folder, (files.SUMMARY, FILES[kind]))
    kept = f"{FILES[kind]} {size / 1e6:.1f} MB" if data else f"no {FILES[kind]}: {note}"
    return f"[fleet] profile of rank {rank} kept ({kept})"


def remove_stored(folder: Path, names: tuple[str, ...]) -> None:
    """Remove the node's copy of what the database now holds (its retention is RUN_FILES_RETENTION_DAYS, not
    the node's disk). A file too large to keep stays for its owner to fetch. Unlinking never follows a link."""
    for name in names:
        try:
            os.unlink(folder / name)
        except OSError:
            pass
    for empty in (folder, folder.parent):
        try:
            empty.rmdir()
        except OSError:
            break  # not empty (other ranks, other files): left as it is


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _read(path: Path, limit: int) -> bytes:
    """A regular file's bytes, never through a symbolic link (the run's account could plant one)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise Unreadable(f"{path.name} cannot be read ({error.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{path.name} is not a regular file")
        if info.st_size > limit:
            raise Unreadable(f"{path.name} is {info.st_size / 1e6:.1f} MB, over RUN_PROFILE_MAX_BYTES")
        return handle.read(limit + 1)[:limit]


def clean_summary(raw, kind: str) -> dict:
    """Only the fields the pages show, each of the right type; anything else is dropped."""
    if not isinstance(raw, dict):
        raise Unreadable("summary.json is not an object")
    if kind == "torch":
        rows = [_row(row, TORCH_ROW) for row in _rows(raw.get("operators"))]
        split = raw.get("split") if isinstance(raw.get("split"), dict) else {}
        window = raw.get("window") if isinstance(raw.get("window"), dict) else {}
        return {
            "operators": rows,
            "split": {key: _number(split.get(key)) for key in SPLIT},
            "window": {key: _number(window.get(key)) for key in ("wait", "warmup", "active")},
        }
    rows = [_row(row, CPROFILE_ROW) for row in _rows(raw.get("functions"))]
    return {"functions": rows, "total_s": _number(raw.get("total_s"))}


TORCH_ROW = {"name": str, "calls": int, "self_cpu_us": float, "cpu_total_us": float, "self_cuda_us": float}
CPROFILE_ROW = {"function": str, "file": str, "line": int, "calls": int, "own_s": float, "cumulative_s": float}
SPLIT = ("steps", "step_us", "total_us", "data_us", "communication_us", "compute_us")


def _rows(value) -> list[dict]:
    if not isinstance(value, list):
        raise Unreadable("summary.json has no table of operators or functions")
    return [row for row in value[:MAX_ROWS] if isinstance(row, dict)]


def _row(row: dict, fields: dict) -> dict:
    clean = {}
    for key, kind in fields.items():
        value = row.get(key)
        if kind is str:
            clean[key] = _text(value)
        else:
            number = _number(value)
            clean[key] = int(number) if kind is int and number is not None else number
    return clean


def _text(value) -> str:
    text = str(value if value is not None else "")[:MAX_NAME]
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None
