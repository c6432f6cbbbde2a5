"""/ws/agent/: tokens, the hello, storing and acking samples, replays and replaced connections."""

import asyncio
import time

import pytest

from inventory.choices import NodeStatus
from inventory.models import GPU, GPUModel, Node
from monitoring.ingest.models import AgentSession, NodeStatusChange
from monitoring.storage.models import GPUSample, GPUState, ProcessSample
from tests.monitoring.ingest.agents import gpu_uuid, samples
from tests.monitoring.ingest.conftest import orm

pytestmark = pytest.mark.django_db(transaction=True)


async def test_it_closes_4401_without_a_token(agents):
    agent = agents(token=None)
    await agent.connect()
    assert await agent.close_code() == 4401


async def test_it_closes_4401_on_an_unknown_token(agents):
    agent = agents(token="not-a-token")
    await agent.connect()
    assert await agent.close_code() == 4401


async def test_it_closes_4400_when_the_first_frame_is_not_a_hello(agents):
    agent = agents()
    await agent.connect()
    await agent.send(samples("gpu-01", 1))
    error = await agent.receive()
    assert error["type"] == "error" and error["code"] == "no_hello"
    assert await agent.close_code() == 4400


async def test_it_closes_4400_on_a_hello_it_cannot_accept(agents):
    agent = agents()
    await agent.connect()
    await agent.send({"type": "hello", "protocol": 1, "hostname": "gpu-01", "gpus": [{"index": -1}]})
    error = await agent.receive()
    assert error["code"] == "bad_payload"
    assert "gpus[0].index" in error["detail"] and "gpus[0].uuid" in error["detail"]
    assert await agent.close_code() == 4400


async def test_it_refuses_a_hello_of_another_protocol_version(agents):
    agent = agents()
    await agent.connect()
    await agent.send({"type": "hello", "protocol": 2, "hostname": "gpu-01", "gpus": []})
    assert (await agent.receive())["code"] == "unsupported_protocol"
    assert await agent.close_code() == 4400


async def test_it_refuses_a_hello_that_names_another_node(agents):
    agent = agents(hostname="gpu-99")
    await agent.connect()
    await agent.send(__import__("tests.monitoring.ingest.agents", fromlist=["hello"]).hello("gpu-99"))
    error = await agent.receive()
    assert error["code"] == "wrong_node" and "'gpu-01'" in error["detail"]
    assert await agent.close_code() == 4400


async def test_a_hello_registers_the_node_and_its_gpus(agents):
    welcome = await agents().start(gpus=2)
    assert welcome == {"type": "welcome", "node": "gpu-01", "interval_s": 1.0, "resume_seq": 0}
    node = await orm(Node.objects.get)(hostname="gpu-01")
    assert (node.status, node.driver_version, node.cuda_version, node.agent_version, node.boot_id) == (
        NodeStatus.ONLINE,
        "550.54.15",
        "12.4",
        "1.0.0",
        "boot-1",
    )
    assert node.last_seen is not None
    gpus = await orm(lambda: list(GPU.objects.filter(node=node).select_related("model").order_by("index")))()
    assert [(g.index, g.uuid, g.model.name, g.memory_total_mib) for g in gpus] == [
        (0, gpu_uuid("gpu-01", 0), "H100 SXM", 81559),
        (1, gpu_uuid("gpu-01", 1), "H100 SXM", 81559),
    ]
    change = await orm(NodeStatusChange.objects.get)(node=node)
    assert (change.old_status, change.new_status, change.reason) == ("offline", "online", "agent connected")


async def test_a_hello_takes_over_a_seeded_gpu_at_the_same_index(agents, node_token):
    node, _ = node_token
    a100 = await orm(GPUModel.objects.get)(name="A100 80GB")
    seeded = await orm(GPU.objects.create)(node=node, index=1, uuid="GPU-demo-gpu-01-1", model=a100)
    await agents().start(gpus=2)
    seeded = await orm(GPU.objects.select_related("model").get)(pk=seeded.pk)
    assert (seeded.uuid, seeded.index, seeded.model.name) == (gpu_uuid("gpu-01", 1), 1, "H100 SXM")
    assert await orm(GPU.objects.filter(node=node).count)() == 2


async def test_samples_are_stored_and_acked(agents):
    agent = agents()
    await agent.start(gpus=2)
    ts = round(time.time(), 3)
    await agent.send(samples("gpu-01", 1, ts, util_gpu=55))
    assert await agent.receive() == {"type": "ack", "seq": 1}
    rows = await orm(lambda: list(GPUSample.objects.order_by("gpu__index")))()
    assert [(r.util_gpu, r.temp_c, r.fan_pct, r.ecc_volatile) for r in rows] == [(55, 71, None, 0)] * 2
    assert all(abs(r.ts.timestamp() - ts) < 1e-6 for r in rows)
    state = await orm(GPUState.objects.get)(gpu__uuid=gpu_uuid("gpu-01", 0))
    assert (state.util_gpu, state.power_w, state.fan_pct) == (55, 512.3, None)
    assert abs(state.last_sample_at.timestamp() - ts) < 1e-6
    assert state.processes[0]["pid"] == 4242 and state.processes[0]["user"] == "alice"
    process = await orm(ProcessSample.objects.get)(gpu=state.gpu_id)
    assert (process.pid, process.os_user, process.cmdline, process.sm_util) == (4242, "alice", "python train.py", 95)
    session = await orm(AgentSession.objects.get)(node__hostname="gpu-01")
    assert session.last_seq == 1


async def test_unknown_keys_are_ignored(agents):
    agent = agents()
    await agent.start(gpus=1, future_field={"x": 1})
    frame = samples("gpu-01", 1, gpus=1, nvlink_gbps=300)
    frame["compression"] = "none"
    await agent.send(frame)
    assert await agent.receive() == {"type": "ack", "seq": 1}
    assert await orm(GPUSample.objects.count)() == 1


async def test_a_replayed_frame_is_stored_once_and_acked_again(agents):
    agent = agents()
    await agent.start(gpus=2)
    frame = samples("gpu-01", 7)
    await agent.send(frame)
    assert await agent.receive() == {"type": "ack", "seq": 7}
    await agent.send(frame)
    assert await agent.receive() == {"type": "ack", "seq": 7}
    assert await orm(GPUSample.objects.count)() == 2
    assert await orm(ProcessSample.objects.count)() == 2


async def test_an_older_replay_does_not_overwrite_the_latest_state(agents):
    agent = agents()
    await agent.start(gpus=1)
    now = round(time.time(), 3)
    await agent.send(samples("gpu-01", 2, now, gpus=1, util_gpu=90))
    await agent.receive()
    await agent.send(samples("gpu-01", 1, now - 5, gpus=1, util_gpu=10))
    await agent.receive()
    state = await orm(GPUState.objects.get)(gpu__uuid=gpu_uuid("gpu-01", 0))
    assert state.util_gpu == 90
    assert await orm(GPUSample.objects.count)() == 2


async def test_a_reconnecting_agent_resumes_after_the_highest_stored_seq(agents):
    first = agents()
    await first.start(session="start-1")
    for seq in (1, 2, 3):
        await first.send(samples("gpu-01", seq, time.time() - 10 + seq))
        await first.receive()
    await first.stop()
    again = await agents().start(session="start-1")
    assert again["resume_seq"] == 3


async def test_a_restarted_agent_starts_again_at_zero(agents):
    first = agents()
    await first.start(session="start-1")
    await first.send(samples("gpu-01", 5))
    await first.receive()
    await first.stop()
    assert (await agents().start(session="start-2"))["resume_seq"] == 0
    assert (await agents().start(session="start-2", boot_id="boot-2"))["resume_seq"] == 0


async def test_a_second_connection_of_the_node_replaces_the_first(agents):
    old = agents()
    await old.start()
    new = agents()
    await new.start()
    assert await old.close_code() == 4409
    await new.send(samples("gpu-01", 1))
    assert await new.receive() == {"type": "ack", "seq": 1}


async def test_a_connection_outlives_the_channel_layers_idle_wait(agents):
    agent = agents()
    await agent.start(gpus=1)
    await asyncio.sleep(6)  # channels-redis waits 5 s per read of the connection's channel
    await agent.send(samples("gpu-01", 1, gpus=1))
    assert await agent.receive() == {"type": "ack", "seq": 1}


async def test_a_connection_replaced_from_another_server_process_closes_after_its_next_frame(agents):
    agent = agents()
    await agent.start(gpus=1)
    # What a hello on another server process records.
    await orm(AgentSession.objects.filter(node__hostname="gpu-01").update)(connection="elsewhere")
    await agent.send(samples("gpu-01", 1, gpus=1))
    assert await agent.receive() == {"type": "ack", "seq": 1}
    assert await agent.close_code() == 4409
