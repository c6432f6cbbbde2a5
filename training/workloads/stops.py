"""Stopping on a signal: SIGTERM or SIGINT ends a training process at once, or after it saves.

A stop raises ``Stopped`` in the main thread, unless the loop checkpoints: then the signal is only
noted (``polite_stops``) and the loop saves at its next step and leaves (training/workloads/saver.py).
Every exit after a stop skips the interpreter's teardown, since a peer rank may already be gone.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any


class Stopped(BaseException):
    """Raised in the main thread when SIGTERM or SIGINT arrives.

    A BaseException so that no ``except Exception`` on the way swallows it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.exit_code = 128 + signum


_stop_signal: int | None = None
# While a loop that checkpoints runs, a signal is only noted: the loop saves at the next step and leaves.
_polite = False


def install_signal_handlers() -> None:
    """Turn SIGTERM/SIGINT into ``Stopped`` so the run ends at the next bytecode (see ``polite_stops``)."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _on_signal)


def _on_signal(signum: int, frame: Any) -> None:
    global _stop_signal
    if _stop_signal is None:
        _stop_signal = signum
        if not _polite:
            raise Stopped(signum)


def polite_stops(on: bool = True) -> None:
    """From now on a stop signal is noted (``stop_signal()``) rather than raised, or raised again."""
    global _polite
    _polite = on


def stop_signal() -> int | None:
    """The stop signal received so far, if any."""
    return _stop_signal


def exit_now(code: int, message: str) -> None:
    """Leave at once: after a signal, a peer rank may be gone and a clean
    shutdown of the process group could block on it."""
    print(message, file=sys.stderr)
    leave_without_teardown(code)


def leave_without_teardown(code: int) -> None:
    """End the process with its output flushed but without the interpreter's teardown."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def leave_stopped(step: int) -> None:
    """Exit as stopped by the signal received (SIGTERM when none was): code 128 + its number."""
    signum = stop_signal() or signal.SIGTERM
    exit_now(128 + signum, f"stopped by {signal.Signals(signum).name} at step {step}")


def guarded(main_fn, *args: Any) -> int:
    """Run ``main_fn`` and turn a stop signal into exit code 128+signum.

    An error raised while stopping (a collective failing because the peer rank
    already left) is part of the stop, not a crash of its own.
    """
    try:
        return main_fn(*args) or 0
    except Stopped as stop:
        exit_now(stop.exit_code, f"stopped by {stop}")
    except BaseException:
        if _stop_signal is not None:
            exit_now(128 + _stop_signal, f"stopped by {signal.Signals(_stop_signal).name}")
        raise
    return 0


class ParentWatch:
    """Ends a worker whose launcher died without ending it.

    torchrun starts each worker in a session of its own, so a SIGKILL aimed at
    torchrun's process group misses them; checking the parent each step (one
    cheap system call) keeps such orphans from training on, unseen.
    """

    def __init__(self) -> None:
        self.parent = os.getppid()

    def check(self) -> None:
        if os.getppid() != self.parent:
            exit_now(1, "the launcher is gone; stopping")
