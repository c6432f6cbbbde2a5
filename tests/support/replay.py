"""Replay scripted telemetry through the real ingest (/ws/agent/) minute by minute, the clock following it.

Each minute is one frame of six 10-second readings; the clock (time-machine) then stands at the minute's
end, where the minute rollup, the rule evaluation and the dispatcher run as beat would run them.
"""

from collections.abc import Callable
from datetime import UTC, datetime

from channels.db import database_sync_to_async

from monitoring.alerts import engine
from monitoring.alerts.choices import AlertKind
from monitoring.alerts.models import Alert
from monitoring.notify.from_events import dispatch_pending
from monitoring.storage import rollups
from tests.monitoring.ingest.agents import reading
from tests.support.ingest import HOST

PID = 31337
STEP_S = 10


def notebook(mem_used_mib: float | None, sm_util: float | None = 0, started_at: float = 0.0) -> dict:
    """alice's forgotten notebook kernel as the agent lists it."""
    return {
        "pid": PID,
        "user": "alice",
        "name": "python",
        "cmdline": "python -m ipykernel_launcher",
        "mem_used_mib": mem_used_mib,
        "sm_util": sm_util,
        "started_at": started_at,
    }


def gpu_reading(ts: float, util: float | None, processes: list[dict] | None) -> dict:
    return reading(HOST, 0, ts, util_gpu=util, processes=processes)


@database_sync_to_async
def evaluate_at(moment: float) -> None:
    now = datetime.fromtimestamp(moment, tz=UTC)
    rollups.rollup_minutes(now)
    engine.evaluate(now)
    dispatch_pending()


@database_sync_to_async
def idle_alerts() -> list[Alert]:
    return list(Alert.objects.filter(kind=AlertKind.IDLE_PROCESS).order_by("opened_at"))


class Replay:
    """One agent's GPU 0 replayed minute by minute from `start` (UNIX seconds, on a minute)."""

    def __init__(self, agent, clock, start: float):
        self.agent, self.clock, self.start, self.seq, self.minute = agent, clock, start, 0, 0

    async def minutes(self, count: int, at: Callable[[int, float], dict | None], evaluate_every: int = 1) -> None:
        """`at(i, ts)` gives the i-th reading since the start (None: the GPU sent nothing then)."""
        for _ in range(count):
            begin = self.start + self.minute * 60
            self.minute += 1
            self.clock.move_to(datetime.fromtimestamp(begin + 60, tz=UTC))
            first = (self.minute - 1) * 60 // STEP_S
            found = [at(first + k, begin + k * STEP_S) for k in range(60 // STEP_S)]
            readings = [r for r in found if r is not None]
            if readings:
                self.seq += 1
                await self.agent.send({"type": "samples", "seq": self.seq, "samples": readings})
                ack = await self.agent.receive(timeout=30)
                assert ack == {"type": "ack", "seq": self.seq}, ack
            if self.minute % evaluate_every == 0:
                await evaluate_at(begin + 60)

    @property
    def now(self) -> float:
        return self.start + self.minute * 60
