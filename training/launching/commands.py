"""Checking a researcher's own command before anything is stored: the program, where and in what it runs.

The one place the launch form, the API and the CLI get their answers from. A command is an argument list
(run without a shell; a first word ``python`` is the environment's interpreter) or a shell line the
researcher chose (run as ``bash -lc LINE``), never both. Each problem is one sentence under its field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from training import environments

MAX_ARGS = 1000
MAX_COMMAND_CHARS = 20_000  # the argument list's words together, or the shell line
MAX_SETUP_CHARS = 20_000
MAX_SETUP_LINES = 200
MAX_VARIABLES = 200
MAX_VALUE_CHARS = 10_000
MAX_WORKDIR_CHARS = 1000
MAX_REF_CHARS = 1000
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}\Z")
COMMAND_FIELDS = ("command", "shell_line", "workdir", "variables", "setup", "env_kind", "env_ref")


@dataclass
class Program:
    """A checked command, as the run stores it."""

    command: list[str] = field(default_factory=list)
    shell_line: str = ""
    workdir: str = ""
    variables: dict[str, str] = field(default_factory=dict)
    setup: str = ""
    env_kind: str = "fleet"
    env_ref: str = ""

    def fields(self) -> dict:
        return {name: getattr(self, name) for name in COMMAND_FIELDS}


def given(request) -> list[str]:
    """The command fields a request filled in (a built-in workload or a script takes none of them)."""
    empty = {"env_kind": ("", "fleet")}
    return [name for name in COMMAND_FIELDS if getattr(request, name) not in (None, "", [], {}, *empty.get(name, ()))]


def check_program(request, errors: dict[str, str]) -> Program:
    """The clean command of ``request`` (a LaunchRequest of workload "command"); problems go into ``errors``."""
    program = Program()
    # Only an absent value (None) takes the default: a false, 0 or [] where text belongs is refused, not ignored.
    command, line = unset(request.command, []), unset(request.shell_line, "")
    if not isinstance(command, list):
        errors["command"] = "The command must be a list of words (strings)."
    elif not isinstance(line, str):
        errors["shell_line"] = "The shell line must be text."
    elif command and line:
        errors["command"] = "Give an argument list or a shell line, not both."
    elif not command and not line.strip():
        errors["command"] = "Give the command to run: an argument list, or a shell line."
    elif command:
        program.command = check_words(command, errors)
    else:
        program.shell_line = check_text(line, "shell_line", "The shell line", MAX_COMMAND_CHARS, errors)
    program.workdir = check_text(
        unset(request.workdir, ""), "workdir", "The working directory", MAX_WORKDIR_CHARS, errors
    )
    if program.workdir and not program.workdir.startswith("/"):
        errors["workdir"] = f"The working directory must be an absolute path on the node, not {program.workdir!r}."
    program.variables = check_variables(unset(request.variables, {}), errors)
    program.setup = check_text(unset(request.setup, ""), "setup", "The setup", MAX_SETUP_CHARS, errors)
    if program.setup.count("\n") >= MAX_SETUP_LINES:
        errors["setup"] = f"The setup has more than {MAX_SETUP_LINES} lines; put them in a script and run that."
    program.env_kind, program.env_ref = check_environment(
        unset(request.env_kind, "fleet"), unset(request.env_ref, ""), errors
    )
    return program


def unset(value, default):
    return default if value is None else value


def check_words(command, errors: dict[str, str]) -> list[str]:
    if not isinstance(command, list) or not all(isinstance(word, str) for word in command):
        errors["command"] = "The command must be a list of words (strings)."
        return []
    if len(command) > MAX_ARGS:
        errors["command"] = f"The command has {len(command):,} words; at most {MAX_ARGS:,}."
    elif sum(len(word) for word in command) > MAX_COMMAND_CHARS:
        errors["command"] = f"The command is longer than {MAX_COMMAND_CHARS:,} characters."
    elif not command[0].strip():
        errors["command"] = "The command's first word (the program) is empty."
    elif any("\x00" in word for word in command):
        errors["command"] = "The command contains a NUL character."
    return list(command)


def check_text(value, name: str, what: str, limit: int, errors: dict[str, str]) -> str:
    if not isinstance(value, str):
        errors[name] = f"{what} must be text."
        return ""
    if "\x00" in value:
        errors[name] = f"{what} contains a NUL character."
    elif len(value) > limit:
        errors[name] = f"{what} is longer than {limit:,} characters."
    return value


def check_variables(variables, errors: dict[str, str]) -> dict[str, str]:
    if not isinstance(variables, dict):
        errors["variables"] = "Variables must be an object of names and text values."
        return {}
    if len(variables) > MAX_VARIABLES:
        errors["variables"] = f"At most {MAX_VARIABLES} variables."
        return {}
    for name, value in variables.items():
        if not isinstance(name, str) or not NAME.match(name):
            errors["variables"] = f"{name!r} is not a variable name (letters, digits and _, not starting with a digit)."
            return {}
        if not isinstance(value, str) or "\x00" in value or len(value) > MAX_VALUE_CHARS:
            limit = f"{MAX_VALUE_CHARS:,}"
            errors["variables"] = f"The value of {name} must be text without NUL, at most {limit} characters."
            return {}
    return dict(variables)


def check_environment(kind, ref, errors: dict[str, str]) -> tuple[str, str]:
    if kind not in environments.names():
        errors["env_kind"] = f"Unknown environment {kind!r}; choose one of {', '.join(environments.names())}."
        return "fleet", ""
    ref = check_text(ref, "env_ref", "The environment's path or image", MAX_REF_CHARS, errors)
    if "env_ref" in errors:
        return kind, ""
    refused = environments.get(kind).check(ref)
    if refused:
        errors["env_ref"] = refused
    return kind, ref
