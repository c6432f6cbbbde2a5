"""A run's GPU use from telemetry streamed through the real ingest: its GPUs, the average, and the idle warning."""

import time
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.db import connections

from inventory.models import GPU
from inventory.nodes import add_node
from monitoring.ingest.batcher import close_batcher
from monitoring.ingest.presence import close_sweeper
from monitoring.storage.partitions import PARTITIONS
from tests.monitoring.ingest.agents import Agent, reading
from training.choices import RunStatus
from training.models import Run

pytestmark = pytest.mark.django_db(transaction=True)
HOST = "gpu-efficiency-01"
SECONDS = 40


@pytest.fixture
async def agent(gpu_models):
    PARTITIONS.reset()
    node_token = await database_sync_to_async(add_node)(HOST)
    agent = Agent(node_token[1], HOST)
    yield agent
    await close_batcher()
    await close_sweeper()
    await sync_to_async(connections.close_all, thread_sensitive=True)()
    PARTITIONS.reset()


@database_sync_to_async
def running_run(name: str, index: int, start: float) -> Run:
    owner, _ = get_user_model().objects.get_or_create(username="alice")
    run = Run.objects.create(
        owner=owner,
        name=name,
        workload="digits_cnn",
        strategy="single",
        status=RunStatus.RUNNING,
        started_at=datetime.fromtimestamp(start, tz=UTC) - timedelta(seconds=5),
    )
    run.gpus.set([GPU.objects.get(node__hostname=HOST, index=index)])
    return run


def process(run_id: int, pid: int) -> dict:
    return {
        "pid": pid,
        "user": "alice",
        "name": "python",
        "cmdline": "python -m training.workloads.digits_cnn",
        "mem_used_mib": 3000,
        "sm_util": 10,
        "started_at": time.time() - 60,
        "run": run_id,
    }


@database_sync_to_async
def page(run: Run) -> str:
    from django.test import Client

    client = Client()
    client.force_login(run.owner)
    return client.get(f"/runs/{run.pk}/").content.decode().split('id="gpu-efficiency"')[1].split("</section>")[0]


async def test_a_run_that_keeps_its_gpu_mostly_idle_is_warned_with_the_figures(agent):
    start = round(time.time()) - 120
    await agent.start(gpus=2)
    slow = await running_run("input-bound", 0, start)
    busy = await running_run("compute-bound", 1, start)
    # Before the slow run's processes appear, GPU 0 is busy with something else: not the run's.
    frames = [[reading(HOST, 0, start - 3, util_gpu=100, processes=[]), reading(HOST, 1, start - 3, util_gpu=0)]]
    for second in range(SECONDS):
        ts = start + second
        frames.append(
            [
                reading(
                    HOST, 0, ts, util_gpu=0 if second % 2 else 36, mem_used_mib=3100, processes=[process(slow.pk, 500)]
                ),
                reading(HOST, 1, ts, util_gpu=95, mem_used_mib=9000, processes=[process(busy.pk, 501)]),
            ]
        )
    for seq, samples in enumerate(frames, start=1):
        await agent.send({"type": "samples", "seq": seq, "samples": samples})
        assert await agent.receive() == {"type": "ack", "seq": seq}  # acked after commit
    await agent.stop()

    slow_page, busy_page = await page(slow), await page(busy)

    assert "GPU busy 18 % of the time: likely input-bound; try more data-loader workers." in slow_page
    assert (
        f"over {SECONDS} telemetry samples" in slow_page and f"{HOST}:0" in slow_page and f"{HOST}:1" not in slow_page
    )
    assert "36 %" in slow_page and "3100 MiB" in slow_page and "3000 MiB" in slow_page  # busiest, memory, the run's own
    assert "busy-warning" not in busy_page and "<strong>95 %</strong>" in busy_page and f"{HOST}:1" in busy_page
