"""Alert rules over the fleet's telemetry, the alert lifecycle, and reclaiming idle GPUs."""
