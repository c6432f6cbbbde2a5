// Run comparison: loss, accuracy and throughput of the chosen runs, step by step.
(function () {
  "use strict";
  const series = JSON.parse(document.getElementById("series").textContent);
  const charts = [["chart-loss", "loss", "Training loss"], ["chart-accuracy", "accuracy", "Held-out accuracy"],
                  ["chart-throughput", "samples_per_s", "Throughput (samples/s)"]];
  charts.forEach(([id, key, title]) => {
    const traces = series.map((s) => {
      const rows = s.metrics.filter((m) => m[key] !== null);
      return { name: s.name, x: rows.map((m) => m.step), y: rows.map((m) => m[key]), mode: "lines" };
    });
    Plotly.newPlot(id, traces, { title: { text: title, font: { size: 14 } }, margin: { l: 55, r: 15, t: 40, b: 90 },
      xaxis: { title: { text: "step" } }, legend: { orientation: "h", y: -0.3 } }, { displaylogo: false, responsive: true });
  });
})();
