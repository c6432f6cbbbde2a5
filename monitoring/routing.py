"""Websocket routes of the monitoring app."""

agent_urlpatterns: list = []
browser_urlpatterns: list = []
