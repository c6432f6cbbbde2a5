"""What one evaluation looks up once: inside `engine.evaluate`, every rule that asks gets the same answer.

Outside an evaluation (a page, a test calling one rule) each call looks up afresh.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

_memo: ContextVar[dict | None] = ContextVar("alert_evaluation_memo", default=None)


@contextmanager
def evaluation() -> Iterator[None]:
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


def once(name: str, load: Callable[[], T]) -> T:
    memo = _memo.get()
    if memo is None:
        return load()
    if name not in memo:
        memo[name] = load()
    return memo[name]
