"""Websocket routes of the training app."""

browser_urlpatterns: list = []
