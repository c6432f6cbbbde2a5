// A node's page: its tiles and processes live, and one chart per metric with a line per GPU.
"use strict";

(() => {
  const hostname = document.querySelector("section[data-node]").dataset.node;
  const gpus = JSON.parse(document.getElementById("chart-gpus").textContent);
  const scales = { mem_used_mib: 1 / 1024 };
  const charts = [...document.querySelectorAll("[data-chart]")].map((el) => ({
    el,
    title: el.dataset.title,
    traces: gpus.map((gpu) => ({ uuid: gpu.uuid, metric: el.dataset.chart, name: `GPU ${gpu.index}`, scale: scales[el.dataset.chart] })),
  }));
  const timeline = charts.length ? new HistoryCharts(charts) : null;
  new LivePage({ scope: "node", node: hostname }, (gpu) => timeline && timeline.extend(gpu));
  if (timeline) timeline.show(initialRange());
})();
