"""Prometheus exposition: dcgm-exporter's names and labels per node, the fleet's own series, and the server's health.

Scrape targets (all behind `METRICS_TOKEN` or a staff session):
- `/metrics/nodes/<hostname>`: one node's GPUs, the way a dcgm-exporter on that node would answer;
- `/metrics/targets`: the list of those targets for Prometheus' HTTP service discovery;
- `/metrics/server`: the web server's own ingest and live-page figures;
- `/metrics`: all of the above in one answer, for a single static target.
"""
