"""Where an agent resumes: the seq up to which every frame of its session is settled (stored or refused for good).

A welcome's `resume_seq` lets the agent forget its frames up to it, so it must never pass a frame that is
not stored: seqs settled above a gap wait in `ahead` until the gap fills. A gap the agent can no longer
fill (it dropped those frames when its buffer overflowed) is given up once more frames than its buffer
holds are settled past it.
"""

# The agent's default buffer (monitoring/agent/buffer.py): a gap older than that many frames cannot fill.
AHEAD_LIMIT = 3600


def advance(last_seq: int, ahead: list[int], settled: list[int]) -> tuple[int, list[int]]:
    """The new (watermark, seqs settled above it) after the seqs settled are added."""
    pending = {seq for seq in (*ahead, *settled) if seq > last_seq}
    while last_seq + 1 in pending:
        last_seq += 1
        pending.discard(last_seq)
    above = sorted(pending)
    while len(above) > AHEAD_LIMIT:
        last_seq = above.pop(0)
        while above and above[0] == last_seq + 1:
            last_seq = above.pop(0)
    return last_seq, above
