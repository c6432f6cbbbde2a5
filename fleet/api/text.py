"""The one check every string from outside passes: no NUL and no lone surrogate.

PostgreSQL refuses both (a NUL in text or JSON, an unpaired surrogate in UTF-8), so a value carrying
one would otherwise fail deep inside a query. Paths, query strings, form fields and JSON bodies (keys
and values, at any depth) all go through `first_bad_text`.
"""

import re
from collections.abc import Iterable

BAD_CHARACTER = re.compile("[\x00\ud800-\udfff]")
WHOLE_NUMBER = re.compile(r"[0-9]{1,18}")
# The largest whole number `whole_number` takes (18 digits, within a bigint): the schema's maximum for ids,
# limits, offsets and cursors typed in a URL.
WHOLE_MAX = 10**18 - 1


def text_problem(value: str) -> str | None:
    """Why this string cannot be stored, or None when it can."""
    found = BAD_CHARACTER.search(value)
    if found is None:
        return None
    if found.group() == "\x00":
        return "contains a NUL character (\\u0000)."
    return f"contains a lone surrogate (\\u{ord(found.group()):04x}), which is not valid Unicode."


def first_bad_text(data, path: str = "") -> tuple[str, str] | None:
    """The first (path, problem) in a parsed JSON value, walking without recursion (deep nesting is fine)."""
    stack = [(path, data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                return where, problem
        elif isinstance(value, dict):
            for key, item in value.items():
                key_problem = text_problem(str(key))
                if key_problem:
                    return where or "body", f"has a key that {key_problem}"
                stack.append((f"{where}.{key}" if where else str(key), item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{index}]", item) for index, item in enumerate(value))
    return None


def first_bad_pair(pairs: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """The first (name, problem) among query-string or form pairs (names are checked too)."""
    for name, value in pairs:
        problem = text_problem(name) or text_problem(value)
        if problem:
            return ("parameter name" if text_problem(name) else name), problem
    return None


def field_of(path: str) -> str:
    """The top-level field a path such as ``gpus[0]`` or ``hyperparameters.lr`` belongs to."""
    return re.split(r"[.\[]", path, maxsplit=1)[0] or "body"


def whole_number(value: str) -> int | None:
    """An id typed in a URL or a form: ASCII digits only (``"²".isdigit()`` is True), within a bigint."""
    return int(value) if WHOLE_NUMBER.fullmatch(value) else None
