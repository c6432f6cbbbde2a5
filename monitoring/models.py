"""Monitoring models: telemetry samples, rollups and alerts."""
