"""Websocket routes of the training app."""

from django.urls import path

from training.consumers import RunConsumer

browser_urlpatterns: list = [
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
]
