"""JSON text between agents, browsers and the server: parsing with limits, and the one test of storable text.

The server parses every client's JSON here (agents' and browsers'), so a frame nested a hundred
thousand deep or carrying a megabyte-long key is refused with a reason instead of exhausting the
interpreter's stack; it sits in a package of its own, free of Django, that the agent's distribution ships too.
`text_problem` is the one definition of text PostgreSQL can store: no NUL character and no lone
surrogate (Python decodes undecodable bytes, as in a command line, to lone surrogates).

Every agent frame passes here, so the limits cost little in the usual case: a pre-scan of the raw text
(`within_limits`, a few C-level passes) proves most frames shallow and short, and only the others are
walked value by value (`check_shape`); `storable_json` likewise clears a whole text of NUL and lone
surrogates at once, so its strings need no test one by one.

The server parses with orjson where it accepts the text (far quicker than json for a samples frame, whose
cost grows with every metric of the sample; docs/benchmarks.md#where-a-samples-time-goes) and with json where
orjson refuses it: NaN, a lone surrogate, a number beyond a double's range. Parsed by either, a text gives the
same value, except a whole number beyond 64 bits, which orjson gives as a float: every check that reads one
(seq, pid, run, a counter) refuses both alike.
The agent's own distribution has no orjson and parses the server's few frames with json.

`dumps` writes the server's hot JSON (live states, a GPU's processes and NVLink figures, far quicker than json
for a state with 18 links) with orjson too: compact and UTF-8 (not \\u-escaped), and with json where orjson
refuses (a whole number beyond 64 bits, a lone surrogate); both give text that parses to the same value.
"""

import json
import re

try:
    from orjson import dumps as fast_dumps
    from orjson import loads as fast_loads
except ImportError:  # the agent's distribution (deploy/agent-dist)
    fast_dumps = fast_loads = None

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
        value = parse_json(text)
    except RecursionError:
        raise JsonTextError("too_deep", f"JSON nested deeper than {max_depth} levels") from None
    except ValueError as exc:
        raise JsonTextError("not_json", f"not JSON: {exc}") from None
    if not within_limits(text, max_depth, max_string):
        check_shape(value, max_depth, max_string)
    return value


def parse_json(text: str) -> object:
    """json.loads(text), through orjson where it can (see the module docstring)."""
    if fast_loads is not None:
        try:
            return fast_loads(text)
        except ValueError:  # orjson.JSONDecodeError: json decides, and names the fault
            pass
    return json.loads(text)


def dumps(value: object) -> str:
    """value as compact JSON text (see the module docstring); NaN and infinities, which no check passes, as null."""
    if fast_dumps is not None:
        try:
            return fast_dumps(value).decode()
        except TypeError:  # orjson.JSONEncodeError
            pass
    return json.dumps(value, separators=(",", ":"))


# What the pre-scan deletes from a text: every byte but a quote and the four brackets.
_NOT_MARKS = bytes(b for b in range(256) if b not in b'"[]{}')
_LEAVES = (b"{}", b"[]")


def within_limits(text: str, max_depth: int, max_string: int) -> bool:
    """True when a JSON text (one json.loads accepted) holds no container deeper than max_depth and no string
    longer than max_string; False when only check_shape can tell. Never True for a text over either limit.

    A string is shorter than its JSON text, so a short text holds no long one. For the depth: with escaped
    backslashes and then escaped quotes dropped, every quote left opens or closes a string. Keeping only
    quotes and brackets, a string without a bracket becomes an empty pair (""); when every quote is in
    such a pair (counted from the left, as str.count does), no string holds a bracket, and the brackets
    are exactly the structure's. Each pass that deletes the empty containers of one kind ("{}" or "[]")
    lowers the nesting by at most one, so brackets gone within max_depth passes prove the depth. A
    bracket inside a string, or deeper nesting, means False.
    """
    if len(text) > max_string:
        return False
    if "\\" in text:
        text = text.replace("\\\\", "").replace('\\"', "")
    marks = text.encode("utf-8", "surrogatepass").translate(None, _NOT_MARKS)
    if marks.count(b'"') != 2 * marks.count(b'""'):
        return False
    brackets = marks.translate(None, b'"')
    for turn in range(max_depth):
        if not brackets:
            return True
        brackets = brackets.replace(_LEAVES[turn % 2], b"")
    return not brackets


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


def storable_json(text: str) -> bool:
    """True when no string in this JSON text (one json.loads accepted) can hold a NUL or a lone surrogate.

    In JSON text either can only come from an escape (\\u0000, \\ud800 to \\udfff: a raw NUL is not JSON), or
    as itself in a text that is not ASCII. False means: test the strings one by one with text_problem.
    """
    if not text.isascii() or "\x00" in text:
        return False
    return "\\" not in text or ("\\u0000" not in text and "\\ud" not in text and "\\uD" not in text)


def storable(value: str, replacement: str = "\ufffd") -> str:
    """value with each NUL and lone surrogate replaced, for senders that must not trip text_problem."""
    if text_problem(value) is None:
        return value
    return SURROGATE.sub(replacement, value.replace("\x00", replacement))
