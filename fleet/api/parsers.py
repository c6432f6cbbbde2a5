"""The API's only request parser: JSON, with every string checked and numbers kept finite."""

import json
import math

from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError

from fleet.api.text import field_of, first_bad_text


def finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a number.")
    return value


def refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number.")


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, answering 400 (not 500) for deep nesting, huge numbers, NUL and lone surrogates."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", "utf-8")
        try:
            text = stream.read().decode(encoding) if stream is not None else ""
            data = json.loads(text, parse_float=finite, parse_constant=refuse_constant) if text else {}
        except RecursionError as exc:
            raise ParseError("JSON parse error - nested too deeply.") from exc
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        found = first_bad_text(data)
        if found:
            path, problem = found
            raise ValidationError(
                {field_of(path): [f"{path} {problem}" if path != field_of(path) else f"This value {problem}"]}
            )
        return data
