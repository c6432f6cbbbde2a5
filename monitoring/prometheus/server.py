"""The web server's own health for Prometheus: what the ingest and the live pages are doing in this process.

Counted where it happens (the batcher, the agent and live-page consumers) into a registry of this
module; the gauges of state kept elsewhere read it at scrape time (their modules set the function).
Each web process answers for itself, so scrape each one.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest

registry = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=registry)

ingest_samples = Counter(
    "fleet_ingest_samples", "GPU samples committed by the ingest (acked to their agents).", registry=registry
)
ingest_frames = Counter("fleet_ingest_frames", "Agent frames committed by the ingest.", registry=registry)
flush_seconds = Histogram(
    "fleet_ingest_flush_seconds",
    "Time one batcher flush took to commit, in seconds.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
    registry=registry,
)
agent_connections = Gauge("fleet_agent_connections", "Nodes whose agent is connected now.", registry=registry)
batcher_queue = Gauge(
    "fleet_ingest_queue_frames", "Agent frames accepted and waiting for the next flush.", registry=registry
)
live_clients = Gauge("fleet_live_clients", "Live-page websocket clients connected now.", registry=registry)


def record_flush(seconds: float, frames: int, samples: int) -> None:
    flush_seconds.observe(seconds)
    ingest_frames.inc(frames)
    ingest_samples.inc(samples)


def exposition() -> str:
    return generate_latest(registry).decode()
