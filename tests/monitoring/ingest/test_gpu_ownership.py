"""A node token reports only its node's GPUs: a hello claiming another node's GPU is refused, closed 4403 and
shown to admins; an admin moves a GPU between nodes explicitly."""

import pytest
from django.core.management import call_command

from inventory.models import GPU
from inventory.nodes import add_node
from monitoring.ingest.models import SecurityEvent
from monitoring.storage.models import GPUSample
from tests.monitoring.ingest.agents import gpu_uuid, hello, samples
from tests.monitoring.ingest.conftest import orm

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def victim(agents):
    """gpu-02, connected once, so its two GPUs are registered to it."""
    token = (await orm(add_node)("gpu-02"))[1]
    agent = agents(token=token, hostname="gpu-02")
    await agent.start(gpus=2)
    await agent.send(samples("gpu-02", 1))
    assert await agent.receive() == {"type": "ack", "seq": 1}
    return agent


async def test_a_hello_listing_another_nodes_gpu_is_refused_with_4403(agents, victim):
    stolen = gpu_uuid("gpu-02", 1)
    frame = hello("gpu-01", gpus=1)
    frame["gpus"].append({**frame["gpus"][0], "index": 1, "uuid": stolen})
    attacker = agents()
    await attacker.connect()
    await attacker.send(frame)
    error = await attacker.receive()
    assert error["type"] == "error" and error["code"] == "foreign_gpu" and stolen in error["detail"], error
    assert await attacker.close_code() == 4403
    gpu = await orm(GPU.objects.select_related("node").get)(uuid=stolen)
    assert (gpu.node.hostname, gpu.index) == ("gpu-02", 1)
    event = await orm(SecurityEvent.objects.select_related("node").get)()
    assert (event.node.hostname, event.kind, event.gpu_uuid) == ("gpu-01", "foreign_gpu", stolen)
    assert "gpu-02" in event.detail
    await victim.send(samples("gpu-02", 2))
    assert await victim.receive() == {"type": "ack", "seq": 2}


async def test_samples_for_a_gpu_the_hello_did_not_list_are_refused(agents, victim):
    attacker = agents()
    await attacker.start(gpus=1)
    frame = samples("gpu-01", 1, gpus=1)
    frame["samples"].append({**frame["samples"][0], "gpu": gpu_uuid("gpu-02", 0)})
    await attacker.send(frame)
    assert await attacker.receive() == {"type": "ack", "seq": 1}
    error = await attacker.receive()
    assert error["code"] == "unknown_gpu" and error["refused"][0]["gpu"] == gpu_uuid("gpu-02", 0)
    count = await orm(lambda: GPUSample.objects.filter(gpu__node__hostname="gpu-02").count())()
    assert count == 2


async def test_an_admin_moves_a_gpu_and_then_the_new_node_may_report_it(agents, victim):
    moved = gpu_uuid("gpu-02", 1)
    await orm(call_command)("fleet_move_gpu", moved, "gpu-01")
    frame = hello("gpu-01", gpus=1)
    frame["gpus"].append({**frame["gpus"][0], "index": 1, "uuid": moved})
    agent = agents()
    await agent.connect()
    await agent.send(frame)
    assert (await agent.receive())["type"] == "welcome"
    gpu = await orm(GPU.objects.select_related("node").get)(uuid=moved)
    assert (gpu.node.hostname, gpu.index) == ("gpu-01", 1)
    assert await orm(SecurityEvent.objects.filter(kind="gpu_moved", gpu_uuid=moved).exists)()
