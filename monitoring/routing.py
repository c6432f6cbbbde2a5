"""Websocket routes of the monitoring app."""

from django.urls import path

from monitoring.ingest.consumer import AgentConsumer

agent_urlpatterns: list = [path("ws/agent/", AgentConsumer.as_asgi())]
browser_urlpatterns: list = []
