"""JSON text between agents, browsers and the server: parsing with limits, and the one test of storable text.

The server parses every client's JSON here (agents' and browsers'), so a frame nested a hundred
thousand deep or carrying a megabyte-long key is refused with a reason instead of exhausting the
interpreter's stack; it sits in the agent package because that one is free of Django and ships alone.
`text_problem` is the one definition of text PostgreSQL can store: no NUL character and no lone
surrogate (Python decodes undecodable bytes, as in a command line, to lone surrogates).
"""

import json
import re

MAX_DEPTH = 16
MAX_STRING_CHARS = 65536
# In a Python string every surrogate code point is a lone one (a pair would have been one character).
SURROGATE = re.compile("[\ud800-\udfff]")


class JsonTextError(ValueError):
    """Text we do not parse: a code (not_json, too_deep, too_long) and a reason."""

    def __init__(self, code: str, detail: str):
        super().__init__(detail)
        self.code = code
        self.detail = detail


def loads(text: str, max_depth: int = MAX_DEPTH, max_string: int = MAX_STRING_CHARS) -> object:
    """The parsed value, or JsonTextError naming why not."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise JsonTextError("too_deep", f"JSON nested deeper than {max_depth} levels") from None
    except ValueError as exc:
        raise JsonTextError("not_json", f"not JSON: {exc}") from None
    check_shape(value, max_depth, max_string)
    return value


def check_shape(value: object, max_depth: int, max_string: int) -> None:
    """Walk the containers (without recursion): none deeper than max_depth, no string over max_string."""
    containers = [(value, 1)] if type(value) in (dict, list) else []
    while containers:
        node, depth = containers.pop()
        if depth > max_depth:
            raise JsonTextError("too_deep", f"JSON nested deeper than {max_depth} levels")
        if type(node) is dict:
            for key in node:
                if len(key) > max_string:
                    raise JsonTextError("too_long", f"a key is over {max_string} characters")
            items = node.values()
        else:
            items = node
        for item in items:
            kind = type(item)
            if kind is dict or kind is list:
                containers.append((item, depth + 1))
            elif kind is str and len(item) > max_string:
                raise JsonTextError("too_long", f"a string is over {max_string} characters")


def text_problem(value: str) -> str | None:
    """Why PostgreSQL could not store value as text, or None when it can."""
    if "\x00" in value:
        return "contains a NUL character (\\u0000)"
    if not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError as exc:
            return f"contains a lone surrogate ({value[exc.start]!r} at {exc.start}); send valid UTF-8"
    return None


def storable(value: str, replacement: str = "\ufffd") -> str:
    """value with each NUL and lone surrogate replaced, for senders that must not trip text_problem."""
    if text_problem(value) is None:
        return value
    return SURROGATE.sub(replacement, value.replace("\x00", replacement))
