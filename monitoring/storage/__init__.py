"""Telemetry storage: daily partitions of raw samples, rollups and retention."""
