"""Bounded FIFO of encoded frames the server has not acknowledged yet."""

from __future__ import annotations

import logging
from collections import deque

log = logging.getLogger(__name__)

# One hour of frames at the default 1 Hz.
DEFAULT_CAPACITY = 3600
# While the buffer overflows, say so once and then every this many frames.
DROP_LOG_EVERY = 300


class FrameBuffer:
    """Unacked (seq, text) frames in seq order; the oldest go first when full."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("buffer capacity must be at least one frame")
        self.capacity = capacity
        self.dropped = 0
        self._frames: deque[tuple[int, str]] = deque()

    def __len__(self) -> int:
        return len(self._frames)

    def append(self, seq: int, text: str) -> None:
        if len(self._frames) >= self.capacity:
            self._frames.popleft()
            self.dropped += 1
            if self.dropped % DROP_LOG_EVERY == 1:
                log.warning(
                    "frame buffer full (%d frames): dropping the oldest, %d dropped so far",
                    self.capacity,
                    self.dropped,
                )
        self._frames.append((seq, text))

    def ack(self, seq: int) -> int:
        """Forget every frame up to and including seq; returns how many went."""
        removed = 0
        while self._frames and self._frames[0][0] <= seq:
            self._frames.popleft()
            removed += 1
        return removed

    def discard(self, seq: int) -> bool:
        """Forget the one frame seq (the server refused it for good)."""
        for item in self._frames:
            if item[0] == seq:
                self._frames.remove(item)
                return True
        return False

    def after(self, seq: int) -> list[tuple[int, str]]:
        """Frames with a seq above seq, oldest first."""
        return [item for item in self._frames if item[0] > seq]

    def seqs(self) -> list[int]:
        return [seq for seq, _ in self._frames]
