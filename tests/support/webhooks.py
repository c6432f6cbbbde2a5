"""The webhook receiver's verification exactly as docs/alerts.md gives it, so the docs stay right."""

import re
from functools import cache
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs" / "alerts.md"


@cache
def documented_verify():
    """`verify_delivery(secret, headers, body, now=None)` from the Python block of docs/alerts.md that defines it."""
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.S)
    (code,) = [block for block in blocks if "def verify_delivery(" in block]
    namespace: dict = {}
    exec(compile(code, str(DOCS), "exec"), namespace)
    return namespace["verify_delivery"]
