import asyncio
import contextlib
import json
import logging
import time

import pytest
from websockets.datastructures import Headers
from websockets.http11 import Response

from monitoring.agent.buffer import FrameBuffer
from monitoring.agent.client import MAX_RETRY_AFTER_S, Agent, agent_url, rate_limit_delay, retry_after_s
from monitoring.agent.simulate import Simulator

from .agent_server import AgentServer, acking, until, welcome


def make_agent(url, **kwargs):
    options = {"interval": 0.05, "backoff_base": 0.01, "backoff_cap": 0.2, "welcome_timeout": 2.0}
    options.update(kwargs)
    return Agent(Simulator(2, "gpu-test", scenario="training"), url, "secret", "gpu-test", **options)


@contextlib.asynccontextmanager
async def running(agent):
    task = asyncio.create_task(agent.run())
    try:
        yield task
    finally:
        agent.stop()
        await asyncio.wait_for(task, 10)


def run(coro):
    asyncio.run(asyncio.wait_for(coro, 60))


def test_the_server_url_gets_the_agent_path_unless_it_has_one():
    assert agent_url("ws://fleet:8000") == "ws://fleet:8000/ws/agent/"
    assert agent_url("https://fleet.example/") == "wss://fleet.example/ws/agent/"
    assert agent_url("ws://fleet:8000/custom/") == "ws://fleet:8000/custom/"
    with pytest.raises(ValueError):
        agent_url("fleet:8000")


def test_it_says_hello_first_with_the_bearer_token():
    async def scenario():
        async with AgentServer() as server:
            agent = make_agent(server.url)
            async with running(agent):
                await until(lambda: server.connections and server.connections[0].samples, what="a samples frame")
            conn = server.connections[0]
            assert conn.path == "/ws/agent/"
            assert conn.authorization == "Bearer secret"
            assert conn.hello["type"] == "hello" and conn.hello["hostname"] == "gpu-test"
            assert conn.hello["protocol"] == 1 and len(conn.hello["gpus"]) == 2
            assert conn.samples[0]["seq"] == 1

    run(scenario())


def test_acks_remove_frames_from_the_buffer():
    async def scenario():
        async with AgentServer() as server:
            agent = make_agent(server.url)
            async with running(agent):
                await until(lambda: server.connections and len(server.connections[0].seqs) >= 6, what="6 frames")
                acked = server.connections[0].seqs[4]
                await until(lambda: all(seq > acked for seq in agent.buffer.seqs()), what="acks applied")
                assert len(agent.buffer) < agent.seq

    run(scenario())


def test_after_the_server_drops_the_connection_it_replays_unacked_frames_in_order():
    async def drop_first_connection(ws, conn, index):
        if index > 0:
            return await acking(ws, conn, index)
        await ws.send(welcome())
        async for message in ws:
            conn.messages.append(message)
            seq = json.loads(message)["seq"]
            if seq <= 3:
                await ws.send(json.dumps({"type": "ack", "seq": seq}))
            if seq == 5:
                await ws.close(1011, "server restarting")

    async def scenario():
        async with AgentServer(drop_first_connection) as server:
            agent = make_agent(server.url)
            async with running(agent):
                await until(lambda: len(server.connections) == 2 and len(server.connections[1].seqs) >= 5)
            first, second = server.connections
            assert first.seqs[:5] == [1, 2, 3, 4, 5]
            assert second.seqs[:2] == [4, 5]
            assert second.seqs == list(range(4, 4 + len(second.seqs)))
            stored = set(first.seqs[:3]) | set(second.seqs)
            assert sorted(stored) == list(range(1, max(stored) + 1))
            assert agent.connections == 2

    run(scenario())


def test_frames_the_welcome_says_are_stored_are_not_sent_again():
    async def no_acks_then_resume(ws, conn, index):
        if index == 0:
            await ws.send(welcome())
            async for message in ws:
                conn.messages.append(message)
                if json.loads(message)["seq"] == 4:
                    return await ws.close(1011)
        await ws.send(welcome(resume_seq=3))
        async for message in ws:
            conn.messages.append(message)
            await ws.send(json.dumps({"type": "ack", "seq": json.loads(message)["seq"]}))

    async def scenario():
        async with AgentServer(no_acks_then_resume) as server:
            agent = make_agent(server.url)
            async with running(agent):
                await until(lambda: len(server.connections) == 2 and len(server.connections[1].seqs) >= 3)
            assert server.connections[1].seqs[0] == 4

    run(scenario())


def test_a_resume_seq_never_drops_frames_the_server_has_not_seen():
    async def close_before_welcome_then_resume_far_ahead(ws, conn, index):
        if index == 0:
            return await ws.close(1011, "not ready")
        await acking_with_welcome(ws, conn, welcome(resume_seq=1000))

    async def scenario():
        async with AgentServer(close_before_welcome_then_resume_far_ahead) as server:
            agent = make_agent(server.url)
            async with running(agent):
                await until(lambda: len(server.connections) == 2 and server.connections[1].seqs)
            assert server.connections[1].seqs[0] == 1

    run(scenario())


async def acking_with_welcome(ws, conn, welcome_text):
    await ws.send(welcome_text)
    async for message in ws:
        conn.messages.append(message)
        await ws.send(json.dumps({"type": "ack", "seq": json.loads(message)["seq"]}))


def test_a_refused_token_is_logged_clearly_and_retried(caplog):
    async def refuse(ws, conn, index):
        await ws.close(4401, "bad token")

    async def scenario():
        async with AgentServer(refuse) as server:
            agent = make_agent(server.url)
            async with running(agent):
                await until(lambda: len(server.connections) >= 2, what="a retry")
            assert server.connections[0].hello["type"] == "hello"
            assert agent.seq > 0

    with caplog.at_level(logging.ERROR, logger="monitoring.agent"):
        run(scenario())
    assert "server refused the token for gpu-test (close code 4401)" in caplog.text


def test_a_token_refused_at_the_handshake_is_reported_the_same_way(caplog):
    def forbid(ws, request):
        return Response(403, "Forbidden", Headers(), b"bad token")

    async def scenario():
        async with AgentServer(process_request=forbid) as server:
            agent = make_agent(server.url)
            async with running(agent):
                await until(lambda: server.attempts >= 2, what="a retry")
            assert server.connections == []

    with caplog.at_level(logging.ERROR, logger="monitoring.agent"):
        run(scenario())
    assert "server refused the token" in caplog.text


def test_retry_after_is_read_as_seconds_or_an_http_date_and_anything_else_is_unreadable():
    assert retry_after_s("3") == 3.0
    assert retry_after_s(" 2.5 ") == 2.5
    assert retry_after_s("-4") == 0.0
    assert retry_after_s("Wed, 21 Oct 2026 07:28:10 GMT", now=1792567680.0) == pytest.approx(10.0)
    for unreadable in (None, "", "soon", "inf", "nan", "Wed, 21 Oct 2026 07:28:10"):
        assert retry_after_s(unreadable) is None, unreadable


def test_the_wait_after_a_429_is_never_shorter_than_asked_and_bounded():
    waits = [rate_limit_delay(2.0) for _ in range(200)]
    assert min(waits) >= 2.0 and max(waits) <= 2.0 + 0.5 + 0.5
    assert len(set(waits)) > 100  # jittered: nodes refused together do not return together
    assert MAX_RETRY_AFTER_S <= rate_limit_delay(10**9) <= MAX_RETRY_AFTER_S * 1.25 + 0.5


def test_a_429_at_the_handshake_is_waited_out_not_taken_for_a_bad_token(caplog):
    refusals = []

    def too_fast(ws, request):
        if len(refusals) < 1:
            refusals.append(time.monotonic())
            return Response(429, "Too Many Requests", Headers({"Retry-After": "1"}), b"rate_limited: wait 0.4 s")
        return None

    async def scenario():
        async with AgentServer(process_request=too_fast) as server:
            agent = make_agent(server.url)
            async with running(agent):
                await until(lambda: server.connections, what="a connection after the wait")
                welcomed_at = time.monotonic()
            assert server.attempts == 2  # with backoff_cap 0.2 s it would have tried again and again
            assert welcomed_at - refusals[0] >= 1.0

    with caplog.at_level(logging.INFO, logger="monitoring.agent"):
        run(scenario())
    assert "server asked to wait 1 s (rate limit): rate_limited: wait 0.4 s" in caplog.text
    assert "token" not in caplog.text


def test_a_429_without_a_readable_retry_after_backs_off_as_usual(caplog):
    def too_fast(ws, request):
        return Response(429, "Too Many Requests", Headers({"Retry-After": "later"}), b"")

    async def scenario():
        async with AgentServer(process_request=too_fast) as server:
            agent = make_agent(server.url)
            async with running(agent):
                await until(lambda: server.attempts >= 3, what="retries")

    with caplog.at_level(logging.INFO, logger="monitoring.agent"):
        run(scenario())
    assert "server asked to wait (rate limit) without saying how long: HTTP 429" in caplog.text
    assert "token" not in caplog.text


def test_a_frame_refused_as_bad_payload_is_dropped_and_not_replayed(caplog):
    async def refuse_frame_two(ws, conn, index):
        if index > 0:
            return await acking(ws, conn, index)
        await ws.send(welcome())
        async for message in ws:
            conn.messages.append(message)
            seq = json.loads(message)["seq"]
            if seq == 2:
                error = {"type": "error", "code": "bad_payload", "detail": "samples[0].ts: not a number", "seq": 2}
                await ws.send(json.dumps(error))
            if seq == 4:
                return await ws.close(1011)

    async def scenario():
        async with AgentServer(refuse_frame_two) as server:
            agent = make_agent(server.url)
            async with running(agent):
                await until(lambda: len(server.connections) == 2 and len(server.connections[1].seqs) >= 4)
            assert server.connections[1].seqs[:3] == [1, 3, 4]

    with caplog.at_level(logging.WARNING, logger="monitoring.agent"):
        run(scenario())
    assert "server refused frame 2 (bad_payload: samples[0].ts: not a number)" in caplog.text


def test_it_keeps_going_when_the_server_sends_garbage(caplog):
    async def garbage_then_acks(ws, conn, index):
        await ws.send("this is not json")
        await ws.send(b"\x00\x01binary")
        await ws.send(welcome())
        await ws.send("[1, 2, 3]")
        await ws.send(json.dumps({"type": "ack", "seq": "seven"}))
        await ws.send(json.dumps({"type": "from-the-future"}))
        async for message in ws:
            conn.messages.append(message)
            await ws.send(json.dumps({"type": "ack", "seq": json.loads(message)["seq"]}))

    async def scenario():
        async with AgentServer(garbage_then_acks) as server:
            agent = make_agent(server.url)
            async with running(agent):
                await until(lambda: server.connections and len(server.connections[0].seqs) >= 5)
                await until(lambda: len(agent.buffer) <= 2, what="acks applied")
            assert len(server.connections) == 1

    with caplog.at_level(logging.WARNING, logger="monitoring.agent"):
        run(scenario())
    assert "not JSON" in caplog.text and "binary frame" in caplog.text
    assert "ack without a valid seq" in caplog.text


def test_it_samples_while_the_server_is_unreachable_and_delivers_everything_later(caplog):
    async def scenario():
        async with AgentServer() as gone:
            port = gone.port
        agent = make_agent(f"ws://127.0.0.1:{port}")
        async with running(agent):
            await until(lambda: agent.seq >= 5, what="frames sampled offline")
            assert len(agent.buffer) == agent.seq
            offline = agent.seq
            async with AgentServer(port=port) as server:
                await until(lambda: server.connections and len(server.connections[0].seqs) >= offline + 2)
                seqs = server.connections[0].seqs
        assert seqs == list(range(1, len(seqs) + 1))

    with caplog.at_level(logging.WARNING, logger="monitoring.agent"):
        run(scenario())
    assert "cannot reach server ws://127.0.0.1" in caplog.text


def test_a_full_buffer_while_offline_keeps_the_newest_frames():
    async def scenario():
        async with AgentServer() as gone:
            port = gone.port
        agent = make_agent(f"ws://127.0.0.1:{port}", buffer=FrameBuffer(3))
        async with running(agent):
            await until(lambda: agent.seq >= 6, what="more frames than the buffer holds")
            async with AgentServer(port=port) as server:
                await until(lambda: server.connections and server.connections[0].seqs)
                first_sent = server.connections[0].seqs[0]
        assert first_sent > 3 and agent.buffer.dropped >= 3

    run(scenario())


def test_a_server_that_sends_no_welcome_is_left_and_retried(caplog):
    async def silent(ws, conn, index):
        await ws.wait_closed()

    async def scenario():
        async with AgentServer(silent) as server:
            agent = make_agent(server.url, welcome_timeout=0.2)
            async with running(agent):
                await until(lambda: len(server.connections) >= 2, what="a retry")

    with caplog.at_level(logging.WARNING, logger="monitoring.agent"):
        run(scenario())
    assert "sent no welcome within 0.2 s" in caplog.text


def test_it_uses_the_interval_the_welcome_sets():
    async def scenario():
        async with AgentServer() as server:
            agent = make_agent(server.url, interval=30.0)
            async with running(agent):
                await until(lambda: server.connections and len(server.connections[0].seqs) >= 4, timeout=5)
            assert agent.interval == 0.05

    run(scenario())


def test_stopping_closes_the_connection_with_code_1000():
    async def scenario():
        async with AgentServer() as server:
            agent = make_agent(server.url)
            async with running(agent):
                await until(lambda: server.connections and server.connections[0].seqs)
            await until(lambda: server.connections[0].close_code is not None, what="the close")
            assert server.connections[0].close_code == 1000

    run(scenario())
