// A sweep's page: the parallel-coordinates chart of finished runs, and the results table kept live over
// /ws/sweeps/<id>/ (the same JSON as /api/sweeps/<id>/, sent whenever the sweep changes).
(function () {
  const initial = JSON.parse(document.getElementById("sweep-data").textContent);
  const UNFINISHED = ["scheduled", "queued", "starting", "running"];
  let drawnMetrics = null;

  function formatMetric(sweep, value) {
    if (value === null || value === undefined) return "N/A";
    return sweep.metric === "accuracy" ? (value * 100).toFixed(2) + " %" : Number(value).toPrecision(4);
  }

  function drawChart(sweep) {
    const done = sweep.runs.filter((run) => run.metric !== null);
    const key = JSON.stringify(done.map((run) => [run.id, run.metric]));
    if (key === drawnMetrics) return;
    drawnMetrics = key;
    document.getElementById("no-results").hidden = done.length > 0;
    document.getElementById("parcoords").hidden = !done.length;
    if (!done.length) return;
    const names = Object.keys(sweep.space).sort();
    const dimensions = names.map((name) => {
      const values = done.map((run) => run.hyperparameters[name]);
      if (values.every((v) => typeof v === "number")) {
        return name === "lr"
          ? { label: name + " (log10)", values: values.map((v) => Math.log10(v)) }
          : { label: name, values };
      }
      const categories = [...new Set(values.map(String))];
      return { label: name, values: values.map((v) => categories.indexOf(String(v))),
               tickvals: categories.map((_, i) => i), ticktext: categories };
    });
    const metric = done.map((run) => run.metric);
    dimensions.push({ label: sweep.metric, values: metric });
    Plotly.react("parcoords", [{
      type: "parcoords",
      line: { color: metric, colorscale: "Viridis", reversescale: sweep.metric === "loss", showscale: true },
      dimensions,
    }], { margin: { l: 60, r: 60, t: 40, b: 30 } }, { displaylogo: false, responsive: true });
  }

  function showTable(sweep) {
    const body = document.querySelector("#results tbody");
    sweep.runs.forEach((run, position) => {
      const row = body.querySelector(`tr[data-run="${run.id}"]`);
      if (!row) return;
      row.cells[0].textContent = String(position + 1);
      const badge = row.querySelector('[data-field="status"]');
      badge.className = "badge " + run.status;
      badge.textContent = run.status_label;
      row.querySelector('[data-field="gpu"]').textContent = run.gpu || "waiting";
      row.querySelector('[data-field="metric"]').textContent = formatMetric(sweep, run.metric);
      body.appendChild(row); // best first, as the server ranks them
    });
    const cancelled = document.getElementById("sweep-cancelled");
    if (sweep.cancelled_at) cancelled.hidden = false;
    const form = document.getElementById("cancel-sweep");
    if (form && (sweep.cancelled_at || !sweep.runs.some((run) => UNFINISHED.includes(run.status)))) form.remove();
  }

  function show(sweep) {
    showTable(sweep);
    drawChart(sweep);
  }

  function connect() {
    const dot = document.getElementById("live-dot");
    const label = document.getElementById("live-label");
    let delay = 1000;
    const open = () => {
      const scheme = location.protocol === "https:" ? "wss://" : "ws://";
      const socket = new WebSocket(scheme + location.host + initial.socket);
      socket.onopen = () => {
        delay = 1000;
        dot.classList.add("on");
        label.textContent = "live";
      };
      socket.onmessage = (message) => {
        const event = JSON.parse(message.data);
        if (event.type === "sweep") show(event.sweep);
      };
      socket.onclose = () => {
        dot.classList.remove("on");
        label.textContent = "reconnecting…";
        setTimeout(open, delay);
        delay = Math.min(delay * 2, 30000);
      };
    };
    open();
  }

  show(initial);
  connect();
})();
