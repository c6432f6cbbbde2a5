"""The Prometheus text format (version 0.0.4): families, labels, numbers."""

from __future__ import annotations

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Sample = tuple[dict[str, str], float | None]


def family(name: str, help_text: str, kind: str, samples: list[Sample]) -> list[str]:
    """HELP, TYPE and one line per sample with a value; a family without values is left out entirely."""
    present = [(labels, value) for labels, value in samples if value is not None]
    if not present:
        return []
    lines = [f"# HELP {name} {escape_help(help_text)}", f"# TYPE {name} {kind}"]
    return lines + [f"{name}{{{label_text(labels)}}} {number(value)}" for labels, value in present]


def label_text(labels: dict[str, str]) -> str:
    return ",".join(f'{key}="{escape(value)}"' for key, value in labels.items())


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", " ")


def number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def document(lines: list[str]) -> str:
    return "\n".join(lines) + "\n" if lines else ""
