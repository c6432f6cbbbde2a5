"""GPU Fleet node agent: streams NVML telemetry to the server (no Django here)."""

AGENT_VERSION = "1.0.0"
PROTOCOL = 1
