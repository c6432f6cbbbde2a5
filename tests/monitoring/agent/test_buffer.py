import logging

import pytest

from monitoring.agent.buffer import DEFAULT_CAPACITY, FrameBuffer


def filled(capacity, seqs):
    buffer = FrameBuffer(capacity)
    for seq in seqs:
        buffer.append(seq, f"frame {seq}")
    return buffer


def test_it_holds_one_hour_of_frames_at_one_hertz_by_default():
    assert DEFAULT_CAPACITY == 3600
    assert FrameBuffer().capacity == 3600


def test_a_full_buffer_drops_the_oldest_frames_and_counts_them(caplog):
    with caplog.at_level(logging.WARNING):
        buffer = filled(3, range(1, 6))

    assert buffer.seqs() == [3, 4, 5]
    assert buffer.dropped == 2
    assert len(caplog.records) == 1
    assert "dropping the oldest" in caplog.records[0].getMessage()


def test_an_ack_removes_every_frame_up_to_its_seq():
    buffer = filled(10, range(1, 6))

    assert buffer.ack(3) == 3
    assert buffer.seqs() == [4, 5]
    assert buffer.ack(3) == 0
    assert buffer.ack(99) == 2
    assert len(buffer) == 0


def test_discard_forgets_one_refused_frame_only():
    buffer = filled(10, range(1, 5))

    assert buffer.discard(2) is True
    assert buffer.discard(2) is False
    assert buffer.seqs() == [1, 3, 4]


def test_after_gives_the_frames_still_to_send_in_order():
    buffer = filled(10, range(1, 5))

    assert buffer.after(2) == [(3, "frame 3"), (4, "frame 4")]
    assert buffer.after(0)[0] == (1, "frame 1")


def test_a_buffer_must_hold_at_least_one_frame():
    with pytest.raises(ValueError):
        FrameBuffer(0)
