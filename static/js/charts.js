// History charts with Plotly: series from /api/gpus/<uuid>/series/, extended live on the short ranges.
"use strict";

const PLOT_CONFIG = { displaylogo: false, responsive: true };

class HistoryCharts {
  // charts: [{el, title, traces: [{uuid, metric, name, scale}]}]
  constructor(charts) {
    this.charts = charts;
    this.range = null;
    this.series = new Map(); // uuid → the latest series response
    this.pending = new Map(); // uuid → live values waiting for their bucket to close
    this.sourceEl = document.querySelector("[data-range-source]");
    for (const button of document.querySelectorAll("[data-range]")) {
      button.addEventListener("click", () => this.show(button.dataset.range));
    }
  }

  metricsOf(uuid) {
    const metrics = new Set();
    for (const chart of this.charts) for (const t of chart.traces) if (t.uuid === uuid) metrics.add(t.metric);
    return [...metrics];
  }

  async show(range) {
    this.range = range;
    for (const button of document.querySelectorAll("[data-range]")) {
      button.classList.toggle("primary", button.dataset.range === range);
    }
    const url = new URL(location.href);
    url.searchParams.set("range", range);
    history.replaceState(null, "", url);
    const uuids = [...new Set(this.charts.flatMap((c) => c.traces.map((t) => t.uuid)))];
    const responses = await Promise.all(uuids.map((uuid) => this.fetchSeries(uuid, range)));
    if (this.range !== range) return; // another range was picked meanwhile
    this.series.clear();
    this.pending.clear();
    for (const chart of this.charts) chart.pending = null;
    clearTimeout(this.redrawTimer);
    this.redrawTimer = null;
    this.latest = 0;
    uuids.forEach((uuid, i) => this.series.set(uuid, responses[i]));
    for (const chart of this.charts) this.draw(chart);
    const first = responses[0];
    if (this.sourceEl && first) {
      const table = { raw: "raw samples", minute: "1-minute averages", hour: "1-hour averages" }[first.table];
      this.sourceEl.textContent = `${table}${first.live ? ", live" : ""}`;
    }
  }

  async fetchSeries(uuid, range) {
    const query = new URLSearchParams({ metrics: this.metricsOf(uuid).join(","), range });
    const response = await fetch(`/api/gpus/${encodeURIComponent(uuid)}/series/?${query}`, {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    });
    if (!response.ok) throw new Error(`series of ${uuid}: HTTP ${response.status}`);
    return response.json();
  }

  draw(chart) {
    let points = 0;
    const data = chart.traces.map((t) => {
      const s = this.series.get(t.uuid);
      points += s.t.length;
      return {
        x: s.t.map((seconds) => new Date(seconds * 1000)),
        y: s.series[t.metric].map((v) => (v === null ? null : v * (t.scale || 1))),
        name: t.name,
        type: "scatter",
        // A line needs two neighbours: a sample alone (a short range, or between gaps) is drawn as a dot.
        mode: "lines+markers",
        marker: { size: isolatedSizes(s.series[t.metric]) },
        line: { width: 1.5 },
        connectgaps: false,
      };
    });
    const first = this.series.values().next().value;
    const layout = {
      title: { text: chart.title, font: { size: 13 }, x: 0, xanchor: "left" },
      height: 230,
      margin: { l: 50, r: 10, t: 30, b: 30 },
      xaxis: { type: "date", range: [new Date(first.start * 1000), new Date(first.end * 1000)] },
      yaxis: { rangemode: "tozero", fixedrange: true },
      showlegend: chart.traces.length > 1,
      legend: { orientation: "h", y: -0.2 },
      annotations: points ? [] : [{ text: "No data in this range", showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.5 }],
    };
    Plotly.react(chart.el, data, layout, PLOT_CONFIG);
    chart.el.dataset.points = String(points);
  }

  // A live GPU state: on a live range, append it (raw ranges) or its bucket's average (minute ranges).
  extend(gpu) {
    const s = this.series.get(gpu.uuid);
    if (!s || !s.live || gpu.ts === null) return;
    const bucket = Math.floor(gpu.ts / s.step_s) * s.step_s;
    if (s.table === "raw") {
      if (s.t.length && gpu.ts <= s.t[s.t.length - 1]) return;
      this.append(gpu.uuid, gpu.ts, (metric) => gpu[metric]);
      return;
    }
    let pending = this.pending.get(gpu.uuid);
    if (pending && pending.bucket !== bucket) {
      const done = pending;
      this.append(gpu.uuid, done.bucket, (metric) => (done.counts[metric] ? done.sums[metric] / done.counts[metric] : null));
      pending = null;
    }
    if (!pending) {
      pending = { bucket, sums: {}, counts: {} };
      this.pending.set(gpu.uuid, pending);
    }
    for (const metric of this.metricsOf(gpu.uuid)) {
      if (gpu[metric] === null || gpu[metric] === undefined) continue;
      pending.sums[metric] = (pending.sums[metric] || 0) + gpu[metric];
      pending.counts[metric] = (pending.counts[metric] || 0) + 1;
    }
  }

  // New points are drawn at most once a second, one Plotly.extendTraces per chart, however many GPUs report.
  append(uuid, seconds, valueOf) {
    const s = this.series.get(uuid);
    if (s.t.length && seconds <= s.t[s.t.length - 1]) return;
    s.t.push(seconds);
    for (const chart of this.charts) {
      chart.traces.forEach((t, i) => {
        if (t.uuid !== uuid) return;
        const value = valueOf(t.metric);
        chart.pending = chart.pending || new Map();
        const points = chart.pending.get(i) || { x: [], y: [] };
        points.x.push(new Date(seconds * 1000));
        points.y.push(value === null || value === undefined ? null : value * (t.scale || 1));
        points.size = points.size || [];
        points.size.push(0); // a live point follows the last one, so the line reaches it
        chart.pending.set(i, points);
      });
    }
    this.latest = Math.max(this.latest || 0, seconds);
    if (!this.redrawTimer) this.redrawTimer = setTimeout(() => this.redraw(), 1000);
  }

  redraw() {
    this.redrawTimer = null;
    const first = this.series.values().next().value;
    if (!first) return;
    const span = first.end - first.start;
    const maxPoints = Math.ceil(span / first.step_s) + 1;
    for (const chart of this.charts) {
      if (!chart.pending || !chart.pending.size) continue;
      const indices = [...chart.pending.keys()];
      const update = {
        x: indices.map((i) => chart.pending.get(i).x),
        y: indices.map((i) => chart.pending.get(i).y),
        "marker.size": indices.map((i) => chart.pending.get(i).size),
      };
      chart.pending.clear();
      // The window slides with the newest point; extendTraces redraws with this layout.
      chart.el.layout.xaxis.range = [new Date((this.latest - span) * 1000), new Date(this.latest * 1000)];
      chart.el.layout.annotations = [];
      Plotly.extendTraces(chart.el, update, indices, maxPoints);
      chart.el.dataset.points = String(chart.el.data.reduce((sum, trace) => sum + trace.x.length, 0));
    }
  }
}

// Marker sizes for a series: a dot where a value has no non-null neighbour, nothing elsewhere.
function isolatedSizes(values) {
  const present = (i) => i >= 0 && i < values.length && values[i] !== null && values[i] !== undefined;
  return values.map((_, i) => (present(i) && !present(i - 1) && !present(i + 1) ? 6 : 0));
}

function initialRange() {
  const wanted = new URL(location.href).searchParams.get("range");
  const buttons = [...document.querySelectorAll("[data-range]")].map((b) => b.dataset.range);
  return buttons.includes(wanted) ? wanted : buttons[0];
}
