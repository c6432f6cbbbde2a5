"""The run page's websocket (progress, logs, state and its GPUs' latest state) and the sweep page's."""

import asyncio
import json

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from fleet.websocket import EventLoopDispatch, JsonTextFrames
from training.broadcast import run_group
from training.models import Run, Sweep
from training.serializers import (
    RunGPUSerializer,
    RunLogSerializer,
    RunMetricSerializer,
    RunStateSerializer,
    SweepSerializer,
)
from training.web.access import visible_runs, visible_sweeps

GPU_STATE_EVERY_S = 2.0
SWEEP_STATE_EVERY_S = 1.0
BACKLOG_MAX = 5000
CLOSE_FORBIDDEN = 4403


class RunConsumer(EventLoopDispatch, JsonTextFrames, AsyncJsonWebsocketConsumer):
    """``/ws/runs/<id>/`` for a logged-in user who may see the run."""

    not_json_error = "Send JSON text frames."

    async def connect(self):
        user = self.scope.get("user")
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        if user is None or not user.is_authenticated or not await self.may_see(user):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.group = run_group(self.run_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        self.gpu_task = asyncio.create_task(self.send_gpu_state())

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)
        if hasattr(self, "gpu_task"):
            self.gpu_task.cancel()

    async def receive_json(self, content, **kwargs):
        if not isinstance(content, dict) or content.get("type") != "resume":
            await self.send_error('Send {"type": "resume", "metric": id, "log": id}.')
            return
        after_metric, after_log = content.get("metric", 0), content.get("log", 0)
        if not all(isinstance(value, int) and not isinstance(value, bool) for value in (after_metric, after_log)):
            await self.send_error("metric and log must be whole numbers (ids).")
            return
        await self.send_json(await self.backlog(after_metric, after_log))

    async def run_update(self, event):
        await self.send_json(event["payload"])

    @database_sync_to_async
    def may_see(self, user) -> bool:
        return visible_runs(user).filter(pk=self.run_id).exists()

    @database_sync_to_async
    def backlog(self, after_metric: int, after_log: int) -> dict:
        """What the page missed between rendering and connecting."""
        run = Run.objects.get(pk=self.run_id)
        metrics = run.metrics.filter(id__gt=after_metric).order_by("id")[:BACKLOG_MAX]
        logs = run.logs.filter(id__gt=after_log).order_by("id")[:BACKLOG_MAX]
        return {
            "type": "update",
            "run": RunStateSerializer(run).data,
            "metrics": RunMetricSerializer(metrics, many=True).data,
            "logs": RunLogSerializer(logs, many=True).data,
        }

    @database_sync_to_async
    def gpu_state(self) -> list:
        gpus = Run.objects.get(pk=self.run_id).gpus.select_related("node", "model", "state")
        return RunGPUSerializer(gpus, many=True).data

    async def send_gpu_state(self):
        while True:
            await asyncio.sleep(GPU_STATE_EVERY_S)
            await self.send_json({"type": "gpus", "gpus": await self.gpu_state()})


class SweepConsumer(EventLoopDispatch, JsonTextFrames, AsyncJsonWebsocketConsumer):
    """``/ws/sweeps/<id>/``: the sweep with its runs, sent whenever it changed, for a user who may see it.

    A sweep's runs change in many processes (node workers, the dispatcher, cancels); the consumer reads
    the sweep through the API's serializer every ``SWEEP_STATE_EVERY_S`` and sends it when it differs.
    """

    not_json_error = "This socket only sends."

    async def connect(self):
        user = self.scope.get("user")
        self.sweep_id = int(self.scope["url_route"]["kwargs"]["sweep_id"])
        if user is None or not user.is_authenticated or not await self.may_see(user):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self.accept()
        self.task = asyncio.create_task(self.send_changes())

    async def disconnect(self, code):
        if hasattr(self, "task"):
            self.task.cancel()

    async def receive_json(self, content, **kwargs):
        await self.send_error("This socket only sends.")

    @database_sync_to_async
    def may_see(self, user) -> bool:
        return visible_sweeps(user).filter(pk=self.sweep_id).exists()

    @database_sync_to_async
    def state(self) -> dict:
        sweeps = Sweep.objects.select_related("owner", "project", "gpu_model").prefetch_related("runs__gpus__node")
        return {"type": "sweep", "sweep": SweepSerializer(sweeps.get(pk=self.sweep_id)).data}

    async def send_changes(self):
        last = None
        while True:
            state = json.loads(json.dumps(await self.state(), default=str))
            if state != last:
                await self.send_json(state)
                last = state
            await asyncio.sleep(SWEEP_STATE_EVERY_S)
