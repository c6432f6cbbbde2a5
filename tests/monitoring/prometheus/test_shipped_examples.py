"""The Grafana dashboard and the scrape file in docs/ ask only for series the server exports."""

import json
import re
from pathlib import Path

from monitoring.agent.metrics import METRICS
from monitoring.prometheus import fleet_series, server

DOCS = Path(__file__).resolve().parents[3] / "docs"
EXPORTED = {m.dcgm for m in METRICS} | {"DCGM_FI_DEV_FB_FREE", fleet_series.NODE_UP[0], fleet_series.BOOKED[0]}
EXPORTED |= {fleet_series.PROCESS_MEMORY[0], fleet_series.IDLE[0]}
EXPORTED |= {m.name for m in server.registry.collect()}
NAME = re.compile(r"\b(DCGM_FI_[A-Z_]+|fleet_[a-z_]+)\b")


def exported(name: str) -> bool:
    for suffix in ("_total", "_bucket", "_count", "_sum"):
        if name.endswith(suffix) and name.removesuffix(suffix) in EXPORTED:
            return True
    return name in EXPORTED


def test_every_dashboard_query_names_exported_series_and_uses_the_node_selector():
    dashboard = json.loads((DOCS / "grafana" / "gpu-fleet.json").read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    names = {name for expr in expressions for name in NAME.findall(expr)}
    assert names and all(exported(name) for name in names), sorted(n for n in names if not exported(n))
    gpu_panels = [expr for expr in expressions if "DCGM_FI" in expr]
    assert all('instance=~"$instance"' in expr for expr in gpu_panels)
    assert {v["name"] for v in dashboard["templating"]["list"]} == {"datasource", "instance"}


def test_the_scrape_file_discovers_targets_from_the_server():
    text = (DOCS / "prometheus" / "gpu-fleet.yml").read_text()
    assert "http_sd_configs:" in text and "/metrics/targets" in text
    assert text.count("credentials_file:") == 2  # the scrape and the discovery both send the token
