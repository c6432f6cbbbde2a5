"""User scripts: a path inside one of the directories an admin allows (RUN_SCRIPT_DIRS), symlinks resolved."""

from pathlib import Path

from django.conf import settings


class ScriptRefused(ValueError):
    """The path names no script a run may start."""


def allowed_dirs() -> list[Path]:
    return [Path(entry).expanduser().resolve() for entry in settings.RUN_SCRIPT_DIRS]


def resolve_script(path: str) -> Path:
    """The real path of an allowed Python script; raises ScriptRefused with the reason otherwise."""
    dirs = allowed_dirs()
    if not dirs:
        raise ScriptRefused("User scripts are switched off: an admin sets RUN_SCRIPT_DIRS to allow them.")
    text = (path or "").strip()
    if not text:
        raise ScriptRefused("Give the path of a script.")
    if "\x00" in text:
        raise ScriptRefused("A path cannot contain a NUL character.")
    candidate = Path(text).expanduser()
    if not candidate.is_absolute():
        raise ScriptRefused("Give an absolute path.")
    try:
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        raise ScriptRefused(f"No such file: {text}") from None
    # Resolved before the check, so a symlink inside an allowed directory cannot point outside it.
    if not any(real.is_relative_to(allowed) for allowed in dirs):
        raise ScriptRefused(f"{text} is outside the allowed script directories ({', '.join(map(str, dirs))}).")
    if not real.is_file():
        raise ScriptRefused(f"{text} is not a file.")
    if real.suffix != ".py":
        raise ScriptRefused(f"{text} is not a Python script (.py).")
    return real


def available_scripts(limit: int = 200) -> list[str]:
    """Python scripts in the allowed directories, for the launch form's suggestions."""
    found: list[str] = []
    for directory in allowed_dirs():
        if directory.is_dir():
            found += sorted(str(path) for path in directory.rglob("*.py") if path.is_file())
    return found[:limit]
