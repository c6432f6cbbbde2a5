// The run page: curves, stats, log tail and GPU state, extended live over /ws/runs/<id>/.
(function () {
  const data = JSON.parse(document.getElementById("run-data").textContent);
  const FINISHED = ["succeeded", "failed", "cancelled", "lost"];
  const MAX_LOG_LINES = 2000;
  let run = data.run;
  let lastMetric = 0, lastLog = 0;

  const layout = (title, ytitle) => ({
    title: { text: title, font: { size: 14 } }, margin: { l: 55, r: 15, t: 40, b: 40 },
    xaxis: { title: { text: "step" } }, yaxis: { title: { text: ytitle } }, showlegend: false,
  });
  const charts = [
    ["chart-loss", "loss", "Training loss", "loss"],
    ["chart-accuracy", "accuracy", "Held-out accuracy", "accuracy"],
    ["chart-throughput", "samples_per_s", "Throughput", "samples/s"],
    ["chart-gflops", "gflops", "Matrix multiplies", "GFLOP/s"],
  ].filter(([id]) => document.getElementById(id)); // the workload's measures only (data.measures)
  function points(metrics, key) {
    const rows = metrics.filter((m) => m[key] !== null && m[key] !== undefined);
    return { x: rows.map((m) => m.step), y: rows.map((m) => m[key]) };
  }
  charts.forEach(([id, key, title, ytitle]) => {
    const p = points(data.metrics, key);
    Plotly.newPlot(id, [{ x: p.x, y: p.y, mode: "lines+markers", marker: { size: 3 } }], layout(title, ytitle),
      { displaylogo: false, responsive: true });
  });

  function addMetrics(metrics) {
    const fresh = metrics.filter((m) => m.id > lastMetric);
    if (!fresh.length) return;
    lastMetric = fresh[fresh.length - 1].id;
    charts.forEach(([id, key]) => {
      const p = points(fresh, key);
      if (p.x.length) Plotly.extendTraces(id, { x: [p.x], y: [p.y] }, [0]);
    });
    document.getElementById("no-progress").hidden = true;
  }

  const logBox = document.getElementById("logs");
  function addLogs(logs) {
    const fresh = logs.filter((l) => l.id > lastLog);
    if (!fresh.length) return;
    lastLog = fresh[fresh.length - 1].id;
    const atBottom = logBox.scrollHeight - logBox.scrollTop - logBox.clientHeight < 40;
    const fragment = document.createDocumentFragment();
    fresh.forEach((l) => {
      const line = document.createElement("div");
      line.textContent = l.line;
      fragment.appendChild(line);
    });
    logBox.appendChild(fragment);
    while (logBox.childElementCount > MAX_LOG_LINES) logBox.firstChild.remove();
    if (atBottom) logBox.scrollTop = logBox.scrollHeight;
    document.getElementById("no-logs").hidden = true;
  }

  const text = (id, value) => { const el = document.getElementById(id); if (el) el.textContent = value; };
  const na = (value, format) => (value === null || value === undefined ? "N/A" : format(value));
  const pad = (n) => String(n).padStart(2, "0");
  const local = (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  const when = (iso) => na(iso, (v) => local(new Date(v)));

  function cost() {
    const rate = run.cost ? parseFloat(run.cost.rate_per_hour) : NaN;
    if (!run.cost || run.cost.rate_per_hour === null) return "N/A";
    if (!run.started_at) return "$0.00";
    const end = run.finished_at ? new Date(run.finished_at) : new Date();
    const hours = Math.max(0, end - new Date(run.started_at)) / 3600000;
    return "$" + (rate * hours).toFixed(2);
  }

  function showRun(state) {
    run = Object.assign(run, state);
    const p = run.progress;
    text("stat-step", na(p.step, String));
    text("stat-epoch", na(p.epoch, String));
    text("stat-loss", na(p.loss, (v) => v.toPrecision(4)));
    text("stat-accuracy", na(p.accuracy, (v) => (v * 100).toFixed(1) + " %"));
    text("stat-samples", na(p.samples_per_s, (v) => v.toPrecision(4)));
    text("stat-gflops", na(p.gflops, (v) => v.toPrecision(4)));
    text("stat-cost", cost());
    text("fact-started", when(run.started_at));
    text("fact-first-step", when(run.first_step_at));
    text("fact-finished", when(run.finished_at));
    text("fact-exit", na(run.exit_code, String));
    const badge = document.querySelector("#status .badge");
    badge.className = "badge " + run.status;
    badge.dataset.status = run.status;
    badge.textContent = run.status_label;
    const waiting = document.getElementById("waiting");
    if (waiting && "waiting_for" in run) {
      waiting.hidden = !run.waiting_for;
      waiting.textContent = run.waiting_for ? run.waiting_for[0].toUpperCase() + run.waiting_for.slice(1) : "";
    }
    const error = document.getElementById("error");
    error.hidden = !run.error;
    error.textContent = run.error || "";
    showEnvironment(run.environment || {});
    const profileReady = document.getElementById("profile-ready");
    if (profileReady && FINISHED.includes(run.status)) profileReady.hidden = false;  // stored before the end is sent
    const cancel = document.getElementById("cancel-form");
    if (cancel && FINISHED.includes(run.status)) cancel.remove();
    else if (cancel && run.cancel_requested_at) {
      const button = cancel.querySelector("button"); button.disabled = true; button.textContent = "Cancelling…";
    }
  }

  const ENV_ORDER = ["python", "torch", "cuda", "cudnn", "driver", "gpu_models", "device", "world_size", "host", "node",
    "git_commit", "git_dirty"];  // training/web/views.py ENVIRONMENT_ORDER
  const CPU_BUILD = "none (CPU build)";
  // As shlex.quote and json.dumps(sort_keys=True) write them, so a live update reads like the page's first render
  // (training/web/views.py record_value).
  const quote = (word) => (word === "" ? "''" : /^[\w@%+=:,./-]+$/.test(word) ? word : "'" + word.replace(/'/g, "'\"'\"'") + "'");
  function json(value) {
    if (Array.isArray(value)) return "[" + value.map(json).join(", ") + "]";
    if (value && typeof value === "object") {
      return "{" + Object.keys(value).sort().map((k) => JSON.stringify(k) + ": " + json(value[k])).join(", ") + "}";
    }
    return JSON.stringify(value);
  }
  function recordValue(key, value) {
    if (value === null || value === undefined) return "N/A";
    if (typeof value === "boolean") return value ? "yes" : "no";
    if (key === "packages" && Array.isArray(value)) return value.length + " installed";
    if (key === "packages" && typeof value === "object") return Object.keys(value).length + " installed (torch " + (value.torch || "N/A") + ")";
    if (key === "command" && Array.isArray(value)) return value.map((word) => quote(String(word))).join(" ");
    if (typeof value === "object") return json(value);
    return String(value);
  }
  let shownRecord = JSON.stringify(run.environment || {});  // the page came with it drawn
  function showEnvironment(record) {
    if (JSON.stringify(record) === shownRecord) return;
    shownRecord = JSON.stringify(record);
    const skip = new Set([...Object.keys(run.hyperparameters || {}), "workload", "strategy"]);
    const keys = Object.keys(record).filter((k) => !skip.has(k));
    if (!keys.length) return;
    keys.sort((a, b) => {
      const ia = ENV_ORDER.indexOf(a), ib = ENV_ORDER.indexOf(b);
      return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || (a < b ? -1 : a > b ? 1 : 0);
    });
    document.getElementById("environment").replaceChildren(...keys.flatMap((k) => {
      const dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = k;
      const cpuBuild = (k === "cuda" || k === "cudnn") && record[k] === null && record.torch && record.cuda === null;
      dd.textContent = cpuBuild ? CPU_BUILD : recordValue(k, record[k]);
      return [dt, dd];
    }));
  }

  function showGPUs(gpus) {
    gpus.forEach((g) => {
      const row = document.querySelector(`#gpus tr[data-gpu="${g.id}"]`);
      if (!row) return;
      const cell = (key, value) => { row.querySelector(`[data-key=${key}]`).textContent = value; };
      cell("util_gpu", na(g.util_gpu, (v) => Math.round(v) + " %"));
      cell("mem_used_mib", na(g.mem_used_mib, (v) => Math.round(v) + " / " + na(g.memory_total_mib, String) + " MiB"));
      cell("temp_c", na(g.temp_c, (v) => Math.round(v) + " °C"));
      cell("power_w", na(g.power_w, (v) => Math.round(v) + " W"));
      cell("last_sample_at", g.last_sample_at ? new Date(g.last_sample_at).toLocaleTimeString() : "never");
    });
  }

  addLogs(data.logs);
  lastMetric = data.metrics.length ? data.metrics[data.metrics.length - 1].id : 0;
  showRun({});
  setInterval(() => { if (!FINISHED.includes(run.status)) text("stat-cost", cost()); }, 1000);

  const dot = document.getElementById("live-dot");
  let delay = 1000;
  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(scheme + location.host + data.socket);
    socket.onopen = () => {
      delay = 1000;
      dot.classList.add("on");
      text("live-label", "live");
      socket.send(JSON.stringify({ type: "resume", metric: lastMetric, log: lastLog }));
    };
    socket.onmessage = (message) => {
      const event = JSON.parse(message.data);
      if (event.type === "update") {
        if (event.run) showRun(event.run);
        addMetrics(event.metrics || []);
        addLogs(event.logs || []);
      } else if (event.type === "gpus") {
        showGPUs(event.gpus);
      }
    };
    socket.onclose = (closed) => {
      dot.classList.remove("on");
      if (closed.code === 4403) { text("live-label", "not allowed"); return; }
      text("live-label", "reconnecting…");
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 15000);
    };
  }
  connect();
})();
