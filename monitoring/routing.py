"""Websocket routes of the monitoring app."""

from django.urls import path

from monitoring.ingest.consumer import AgentConsumer
from monitoring.live.consumer import LiveConsumer
from monitoring.notify.transports.inapp.consumer import NotificationConsumer

agent_urlpatterns: list = [path("ws/agent/", AgentConsumer.as_asgi())]
browser_urlpatterns: list = [
    path("ws/live/", LiveConsumer.as_asgi()),
    path("ws/notifications/", NotificationConsumer.as_asgi()),
]
