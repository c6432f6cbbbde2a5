// A GPU's page: its tile, details and processes live, and its history charts.
"use strict";

(() => {
  const [gpu] = JSON.parse(document.getElementById("chart-gpus").textContent);
  const CHARTS = {
    util: [["util_gpu", "GPU"], ["util_mem", "Memory"]],
    memory: [["mem_used_mib", "Used", 1 / 1024]],
    power: [["power_w", "Power"]],
    temp: [["temp_c", "Temperature"]],
    clocks: [["sm_clock_mhz", "SM"], ["mem_clock_mhz", "Memory"]],
    pcie: [["pcie_tx_kib_s", "TX", 1 / 1024], ["pcie_rx_kib_s", "RX", 1 / 1024]],
  };
  const charts = [...document.querySelectorAll("[data-chart]")].map((el) => ({
    el,
    title: el.dataset.title,
    traces: CHARTS[el.dataset.chart].map(([metric, name, scale]) => ({ uuid: gpu.uuid, metric, name, scale })),
  }));
  const timeline = new HistoryCharts(charts);

  function drawDetails(state) {
    Tiles.setText(document, "util_mem", Fmt.na(state.util_mem, "%"));
    Tiles.setText(document, "clocks", `${Fmt.na(state.sm_clock_mhz, "MHz")} / ${Fmt.na(state.mem_clock_mhz, "MHz")}`);
    Tiles.setText(document, "fan", Fmt.na(state.fan_pct, "%"));
    Tiles.setText(document, "ecc", state.ecc_volatile === null ? Fmt.NA : String(state.ecc_volatile));
    if ("nvlink" in state) drawLinks(state);
    const ts = Tiles.field(document, "ts");
    if (ts && state.ts !== null) ts.textContent = new Date(state.ts * 1000).toLocaleString();
  }

  function drawLinks(state) {
    // null: no NVLink, or the latest per-link figures are stale; every link then shows N/A.
    for (const rates of document.querySelectorAll("[data-link] [data-link-rates]")) {
      const link = (state.nvlink || [])[Number(rates.parentElement.dataset.link)];
      rates.textContent = Fmt.linkRates(link || { tx_kib_s: null, rx_kib_s: null });
    }
  }

  new LivePage({ scope: "gpu", gpu: gpu.uuid }, (state) => {
    drawDetails(state);
    Tiles.setText(document, "nvlink_total", `${Fmt.gbs(state.nvlink_tx_kib_s)} / ${Fmt.gbs(state.nvlink_rx_kib_s)} GB/s`);
    timeline.extend(state);
  });
  timeline.show(initialRange());
})();
