import asyncio
import contextlib
import json
import logging

import pytest
from websockets.datastructures import Headers
from websockets.http11 import Response

from monitoring.agent.buffer import FrameBuffer
from monitoring.agent.client import Agent, agent_url
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
