"""Per-node limits on frames and bytes a second, so one node cannot crowd out the others.

Two token buckets per node in each server process, refilled continuously and kept across the node's
connections (reconnecting does not refill them). Each holds AGENT_LIMIT_BURST_S seconds of its rate,
enough for an agent's replay of its buffer after an outage; a node that keeps sending faster is told
why (`rate_limited`) and closed with 4429, and its agent reconnects with backoff and replays what was
not acked, so nothing a well-behaved agent sent is lost. Until its allowance holds a second's worth again,
the node's reconnects are refused at the handshake with HTTP 429 and Retry-After, before its token is
looked up: a node that reconnects in a loop costs no query, no hello and no websocket.
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

    def wait_for(self, amount: float, now: float) -> float:
        """Seconds until the bucket holds amount (0 when it does now)."""
        if self.level is None:
            return 0.0
        level = min(self.capacity, self.level + max(0.0, now - self.at) * self.rate)
        return max(0.0, (min(amount, self.capacity) - level) / self.rate)


class RateLimit:
    """One connection's allowance of frames and bytes."""

    def __init__(self, frames_per_s: float, bytes_per_s: float, burst_s: float):
        self.frames = Bucket(frames_per_s, max(1.0, frames_per_s * burst_s))
        self.bytes = Bucket(bytes_per_s, bytes_per_s * burst_s)

    def over(self, size: int, now: float | None = None) -> str | None:
        """Why a frame of size bytes exceeds the allowance now (nothing is spent: overdraw charges it), or None
        (and the allowance is spent)."""
        now = time.monotonic() if now is None else now
        if not self.frames.take(1, now):
            return f"more than {self.frames.rate:g} frames a second (bursts of {self.frames.capacity:.0f})"
        if not self.bytes.take(size, now):
            self.frames.level += 1  # the frame's token back, or overdraw would charge the frame twice
            return f"more than {self.bytes.rate:.0f} bytes a second (bursts of {self.bytes.capacity:.0f})"
        return None

    def overdraw(self, size: int, now: float | None = None) -> None:
        """Charge a frame refused for the allowance (or refused unread, too big): it was sent all the same, so
        the allowance goes into debt, and the node's cool-down lasts until that is paid back. Without this a
        node whose 1 MiB frames are refused with most of a MiB left would be let back in at once, and each of
        its reconnects would cost a token lookup and a hello."""
        now = time.monotonic() if now is None else now
        for bucket, amount in ((self.frames, 1), (self.bytes, size)):
            bucket.take(0, now)  # refilled up to now
            bucket.level -= amount

    def recovery_s(self, now: float) -> float:
        """Seconds until both allowances hold a second's worth of their rate again."""
        return max(self.frames.wait_for(self.frames.rate, now), self.bytes.wait_for(self.bytes.rate, now))


_by_node: dict[int, RateLimit] = {}


def limit_for(node_id: int, frames_per_s: float, bytes_per_s: float, burst_s: float) -> RateLimit:
    """The node's allowance in this process (a new one if the settings changed)."""
    limit = _by_node.get(node_id)
    if limit is None or (limit.frames.rate, limit.bytes.rate) != (frames_per_s, bytes_per_s):
        limit = _by_node[node_id] = RateLimit(frames_per_s, bytes_per_s, burst_s)
    return limit


# Nodes closed for their rate, by their token's hash.
_cooling: dict[str, int] = {}


def cool_down(token_hash: str, node_id: int) -> None:
    _cooling[token_hash] = node_id


def cooling_down(token_hash: str, now: float | None = None) -> float | None:
    """Seconds before a node closed for its rate may connect again, or None when it may now."""
    node_id = _cooling.get(token_hash)
    if node_id is None:
        return None
    limit = _by_node.get(node_id)
    wait = limit.recovery_s(time.monotonic() if now is None else now) if limit is not None else 0.0
    if wait <= 0:
        del _cooling[token_hash]
        return None
    return wait
