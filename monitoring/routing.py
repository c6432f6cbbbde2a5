"""Websocket routes of the monitoring app."""

from django.urls import path

from monitoring.notify.consumer import NotificationConsumer

agent_urlpatterns: list = []
browser_urlpatterns: list = [
    path("ws/notifications/", NotificationConsumer.as_asgi()),
]
