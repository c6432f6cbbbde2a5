// Alert page: the values that made the alert fire (utilization and memory over its window), thresholds dashed.
(function () {
  "use strict";
  const el = document.getElementById("evidence-chart");
  const data = JSON.parse(document.getElementById("evidence-data").textContent);
  const panels = [
    { key: "util_gpu", title: "Utilization (%)", scale: 1, colour: "#3559e0" },
    { key: "mem_used_mib", title: "Memory (GiB)", scale: 1 / 1024, colour: "#7a3fd1" },
    { key: "temp_c", title: "Temperature (°C)", scale: 1, colour: "#d98b06" },
  ].filter(function (p) { return p.key in data.series; });
  const traces = [];
  const shapes = [];
  panels.forEach(function (p, i) {
    const axis = i === 0 ? "y" : "y" + (i + 1);
    const values = data.series[p.key].map(function (v) { return v === null ? null : v * p.scale; });
    traces.push({ name: p.title, x: data.ts, y: values, yaxis: axis, mode: "lines", line: { color: p.colour }, connectgaps: false });
    if (p.key in data.thresholds) {
      const level = data.thresholds[p.key] * p.scale;
      shapes.push({ type: "line", xref: "paper", x0: 0, x1: 1, yref: axis, y0: level, y1: level, line: { color: "#d43c3c", dash: "dash", width: 1.5 } });
    }
  });
  shapes.push({ type: "line", xref: "x", x0: data.opened, x1: data.opened, yref: "paper", y0: 0, y1: 1, line: { color: "#888", dash: "dot", width: 1 } });
  const layout = {
    margin: { t: 10, r: 10, b: 40, l: 60 },
    showlegend: false,
    shapes: shapes,
    xaxis: { range: [data.start, data.end], title: { text: "Time (" + data.zone + ")" } },
    grid: { rows: panels.length, columns: 1, pattern: "independent", roworder: "top to bottom" },
  };
  panels.forEach(function (p, i) {
    layout[i === 0 ? "yaxis" : "yaxis" + (i + 1)] = { title: { text: p.title }, rangemode: "tozero" };
    if (i > 0) layout["xaxis" + (i + 1)] = { matches: "x" };
    traces[i].xaxis = i === 0 ? "x" : "x" + (i + 1);
  });
  Plotly.newPlot(el, traces, layout, { displayModeBar: false, responsive: true }).then(function () {
    el.dataset.drawn = "1";
  });
})();
