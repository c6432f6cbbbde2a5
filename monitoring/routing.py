"""Websocket routes of the monitoring app."""

from django.urls import path

from monitoring.live_consumer import LiveConsumer

agent_urlpatterns: list = []
browser_urlpatterns: list = [
    path("ws/live/", LiveConsumer.as_asgi()),
]
