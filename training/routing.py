"""Websocket routes of the training app."""

from django.urls import path

from training.web.consumers import RunConsumer, SweepConsumer

browser_urlpatterns: list = [
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
    path("ws/sweeps/<int:sweep_id>/", SweepConsumer.as_asgi()),
]
