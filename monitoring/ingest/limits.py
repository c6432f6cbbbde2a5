"""Per-node limits on frames and bytes a second, so one node cannot crowd out the others.

Two token buckets per node in each server process, refilled continuously and kept across the node's
connections (reconnecting does not refill them). Each holds AGENT_LIMIT_BURST_S seconds of its rate,
enough for an agent's replay of its buffer after an outage; a node that keeps sending faster is told
why (`rate_limited`) and closed with 4429, and its agent reconnects with backoff and replays what was
not acked, so nothing a well-behaved agent sent is lost.
"""

import time
from dataclasses import dataclass

CLOSE_TOO_FAST = 4429


@dataclass
class Bucket:
    """Full at first; refills at rate per second up to capacity."""

    rate: float
    capacity: float
    level: float | None = None
    at: float = 0.0

    def take(self, amount: float, now: float) -> bool:
        if self.level is None:
            self.level = self.capacity
        else:
            self.level = min(self.capacity, self.level + max(0.0, now - self.at) * self.rate)
        self.at = now
        if amount > self.level:
            return False
        self.level -= amount
        return True


class RateLimit:
    """One connection's allowance of frames and bytes."""

    def __init__(self, frames_per_s: float, bytes_per_s: float, burst_s: float):
        self.frames = Bucket(frames_per_s, max(1.0, frames_per_s * burst_s))
        self.bytes = Bucket(bytes_per_s, bytes_per_s * burst_s)

    def over(self, size: int, now: float | None = None) -> str | None:
        """Why a frame of size bytes exceeds the allowance now, or None (and the allowance is spent)."""
        now = time.monotonic() if now is None else now
        if not self.frames.take(1, now):
            return f"more than {self.frames.rate:g} frames a second (bursts of {self.frames.capacity:.0f})"
        if not self.bytes.take(size, now):
            return f"more than {self.bytes.rate:.0f} bytes a second (bursts of {self.bytes.capacity:.0f})"
        return None


_by_node: dict[int, RateLimit] = {}


def limit_for(node_id: int, frames_per_s: float, bytes_per_s: float, burst_s: float) -> RateLimit:
    """The node's allowance in this process (a new one if the settings changed)."""
    limit = _by_node.get(node_id)
    if limit is None or (limit.frames.rate, limit.bytes.rate) != (frames_per_s, bytes_per_s):
        limit = _by_node[node_id] = RateLimit(frames_per_s, bytes_per_s, burst_s)
    return limit
