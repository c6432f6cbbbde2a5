"""Turning alert events into notifications and delivering them through the transports."""
