// A sweep's parallel-coordinates chart: one line per finished run, coloured by the metric.
(function () {
  const sweep = JSON.parse(document.getElementById("sweep-data").textContent);
  const done = sweep.runs.filter((run) => run.metric !== null);
  if (!done.length) {
    document.getElementById("no-results").hidden = false;
    document.getElementById("parcoords").hidden = true;
    if (sweep.runs.some((run) => ["queued", "starting", "running"].includes(run.status))) setTimeout(() => location.reload(), 5000);
    return;
  }
  const names = Object.keys(sweep.space).sort();
  const dimensions = names.map((name) => {
    const values = done.map((run) => run.hyperparameters[name]);
    if (values.every((v) => typeof v === "number")) {
      const log = name === "lr";
      return log
        ? { label: name + " (log10)", values: values.map((v) => Math.log10(v)) }
        : { label: name, values };
    }
    const categories = [...new Set(values.map(String))];
    return { label: name, values: values.map((v) => categories.indexOf(String(v))),
             tickvals: categories.map((_, i) => i), ticktext: categories };
  });
  const metric = done.map((run) => run.metric);
  dimensions.push({ label: sweep.metric, values: metric });
  Plotly.newPlot("parcoords", [{
    type: "parcoords",
    line: { color: metric, colorscale: "Viridis", reversescale: sweep.metric === "loss", showscale: true },
    dimensions,
  }], { margin: { l: 60, r: 60, t: 40, b: 30 } }, { displaylogo: false, responsive: true });
  if (sweep.runs.some((run) => ["queued", "starting", "running"].includes(run.status))) setTimeout(() => location.reload(), 10000);
})();
