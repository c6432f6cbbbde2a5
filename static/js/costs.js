// Costs page charts: bars by project, researcher and month; cumulative spending against a budget.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("cost-data").textContent);
  const layout = { margin: { t: 10, r: 10, b: 60, l: 60 }, yaxis: { tickprefix: "$" }, showlegend: false };
  const config = { displayModeBar: false, responsive: true };

  function bars(id, names, values) {
    const el = document.getElementById(id);
    if (!el) return;
    if (!names.length) { el.style.display = "none"; return; }
    Plotly.newPlot(el, [{ type: "bar", x: names, y: values, marker: { color: "#3559e0" } }], layout, config);
  }

  function budget(index) {
    const el = document.getElementById("chart-budget");
    const b = data.budgets[index];
    if (!el || !b) return;
    const days = [data.month_start].concat(b.days);
    const spent = [0].concat(b.cumulative);
    const traces = [
      { name: "Spent", x: days, y: spent, mode: "lines+markers", line: { color: "#3559e0" } },
      { name: "Budget", x: [data.month_start, data.month_end], y: [b.amount, b.amount], mode: "lines", line: { color: "#d43c3c", dash: "dash" } },
    ];
    if (b.month_end_forecast !== null && b.days.length) {
      traces.push({ name: b.forecast_label, x: [b.days[b.days.length - 1], data.month_end], y: [spent[spent.length - 1], b.month_end_forecast], mode: "lines", line: { color: "#d98b06", dash: "dot" } });
    }
    Plotly.newPlot(el, traces, Object.assign({}, layout, { showlegend: true, legend: { orientation: "h" }, xaxis: { range: [data.month_start, data.month_end] } }), config);
  }

  bars("chart-projects", data.projects.names, data.projects.cost);
  bars("chart-users", data.users.names, data.users.cost);
  bars("chart-history", data.history.months, data.history.cost);
  const pick = document.getElementById("budget-pick");
  if (pick) {
    pick.addEventListener("change", function () { budget(Number(pick.value)); });
    budget(0);
  }
})();
