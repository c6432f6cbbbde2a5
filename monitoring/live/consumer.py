"""/ws/live/: a logged-in browser subscribes to the fleet, a node or a GPU and gets a snapshot, then updates."""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from fleet.websocket import EventLoopDispatch, JsonTextFrames
from monitoring.live.fanout import live_group, update_text
from monitoring.live.subscriptions import Subscription, SubscriptionError
from monitoring.prometheus import server as server_metrics

# 4401 mirrors HTTP 401 like the agent's close code; the browser logs in again and reconnects.
CLOSE_NOT_LOGGED_IN = 4401
MAX_MESSAGE_CHARS = 4096


class LiveConsumer(EventLoopDispatch, JsonTextFrames, AsyncJsonWebsocketConsumer):
    """Thin: checks the session, validates subscribe messages and forwards the coalesced updates."""

    max_text_chars = MAX_MESSAGE_CHARS
    not_text_error = f"send JSON text messages of at most {MAX_MESSAGE_CHARS} characters"
    not_json_error = 'not JSON: send {"type": "subscribe", "scope": "fleet"}'
    subscription: Subscription | None = None
    joined = False
    counted = False  # in the server's live-client gauge

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_NOT_LOGGED_IN)
            return
        await self.accept()
        self.counted = True
        server_metrics.live_clients.inc()

    async def disconnect(self, code: int) -> None:
        if self.counted:
            server_metrics.live_clients.dec()
        if self.joined:
            await self.channel_layer.group_discard(live_group(), self.channel_name)

    async def receive_json(self, content, **kwargs) -> None:
        try:
            subscription = Subscription.parse(content)
            if not self.joined:
                # Join before reading the snapshot so no update falls between the two; pages drop older states.
                await self.channel_layer.group_add(live_group(), self.channel_name)
                self.joined = True
            self.subscription, snapshot = await database_sync_to_async(subscription.snapshot)()
        except SubscriptionError as error:
            await self.send_error(str(error))
            return
        await self.send_json(snapshot)

    async def telemetry_update(self, message: dict) -> None:
        if self.subscription is None:
            return
        gpus, nodes = self.subscription.narrow(message["gpus"], message["nodes"])
        if gpus or nodes:
            await self.send(text_data=update_text(gpus, nodes, message["sent_at"]))
