// The Processes page: every GPU process of the fleet, live; sorted by any column, filtered by user, node
// and model. The owner comes from the server (training/owners.py); the End button appears where the viewer
// may use it (their own processes, or any for an admin), and the server checks again. End on a running
// run's process stops the whole run (monitoring/processes/stopping.py).
"use strict";

(() => {
  const viewer = JSON.parse(document.getElementById("viewer").textContent);
  const table = document.querySelector("[data-process-table]");
  const body = table.querySelector("[data-process-rows]");
  const none = document.querySelector("[data-no-process-rows]");
  const count = document.querySelector("[data-process-count]");
  const filters = document.querySelector("[data-process-filters]");
  const stopForm = document.querySelector("[data-stop-form]");
  const state = new FleetState();
  const params = new URL(location.href).searchParams;
  let sort = { key: params.get("sort") || "memory", descending: params.get("order") !== "asc" };

  // One row per process, with the values the columns sort on.
  function rows() {
    const out = [];
    for (const gpu of state.gpus.values()) {
      for (const p of gpu.processes || []) {
        out.push({
          gpu, p,
          node: gpu.node,
          index: gpu.index,
          model: gpu.model || gpu.name || "",
          owner: p.owner || p.user || "",
          run: p.run ?? null,
          command: p.cmdline || p.name || "",
          memory: p.mem_used_mib,
          sm: p.sm_util,
          running: p.started_at === null || p.started_at === undefined ? null : Date.now() / 1000 - p.started_at,
        });
      }
    }
    return out;
  }

  const SORT_VALUE = { gpu: (r) => `${r.node}\u0000${String(r.index).padStart(4, "0")}` };

  function compare(a, b) {
    const value = SORT_VALUE[sort.key] || ((r) => r[sort.key]);
    const x = value(a), y = value(b);
    if (x === y) return a.p.pid - b.p.pid;
    if (x === null || x === undefined || x === "") return 1; // N/A sorts last either way
    if (y === null || y === undefined || y === "") return -1;
    const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
    return sort.descending ? -order : order;
  }

  function matches(r) {
    const user = filters.elements.user.value;
    const node = filters.elements.node.value;
    const model = filters.elements.model.value;
    return (!user || r.owner === user || r.p.user === user) && (!node || r.node === node) && (!model || r.model === model);
  }

  function mayEnd(r) {
    return viewer.admin || (r.p.owner !== null && r.p.owner === viewer.user);
  }

  function cell(text, attrs) {
    return Fmt.el("td", attrs || {}, text);
  }

  function row(r) {
    const tr = Fmt.el("tr", { "data-pid": String(r.p.pid), "data-node": r.node });
    const gpu = Fmt.el("td");
    gpu.append(Fmt.el("a", { href: `/fleet/gpus/${encodeURIComponent(r.gpu.uuid)}/` }, `GPU ${r.index}`));
    const owner = Fmt.el("td", { "data-col": "owner" });
    if (r.p.owner) {
      owner.append(Fmt.el("b", {}, r.p.owner));
      if (r.p.owner !== r.p.user) owner.append(" ", Fmt.el("span", { class: "muted" }, `(${r.p.user})`));
    } else {
      owner.append(`${r.p.user || "unknown"} `, Fmt.el("span", { class: "muted" }, "(no researcher)"));
    }
    const run = Fmt.el("td");
    if (r.run) run.append(Fmt.el("a", { href: `/runs/${r.run}/` }, `#${r.run}`));
    else run.append(Fmt.el("span", { class: "muted" }, "—"));
    const command = Fmt.el("td");
    command.append(Fmt.el("code", { class: "cmd", title: r.command }, r.command), " ", Fmt.el("span", { class: "muted" }, `pid ${r.p.pid}`));
    const memory = r.memory === null || r.memory === undefined ? Fmt.NA : `${Fmt.gib(r.memory)} GiB`;
    const action = Fmt.el("td");
    if (mayEnd(r)) {
      const button = Fmt.el("button", { type: "button", class: "danger small", "data-end": "" }, "End");
      button.addEventListener("click", () => end(r));
      action.append(button);
    }
    tr.append(cell(r.node, { "data-col": "node" }), gpu, owner, run, command, cell(memory, { "data-col": "memory" }));
    tr.append(cell(Fmt.na(r.sm, "%"), { "data-col": "sm" }), cell(Fmt.runningFor(r.p.started_at), { "data-started": r.p.started_at ?? "" }), action);
    return tr;
  }

  // How many processes of a run the fleet reports (one process on several GPUs counts once).
  function runProcessCount(run) {
    return new Set(rows().filter((x) => x.run === run).map((x) => `${x.node}\u0000${x.p.pid}`)).size;
  }

  // A run's process is not ended alone (its other ranks would crash): the server stops the whole run, as
  // Cancel does, so the confirmation says so.
  function confirmation(r) {
    const what = `pid ${r.p.pid} (${r.command}) of ${r.owner || "an unknown user"} on ${r.node} GPU ${r.index}`;
    if (!r.run) return `End ${what}? It gets SIGTERM, then SIGKILL after the grace period.`;
    const n = runProcessCount(r.run);
    return `End ${what}: this ends run #${r.run} (${n} process${n === 1 ? "" : "es"}), as Cancel does: ` +
      "SIGTERM (built-in workloads save a checkpoint), then SIGKILL after the grace period. Go on?";
  }

  function end(r) {
    if (!confirm(confirmation(r))) return;
    stopForm.elements.gpu.value = r.gpu.uuid;
    stopForm.elements.pid.value = String(r.p.pid);
    stopForm.elements.run.value = r.run ? String(r.run) : "";
    stopForm.submit();
  }

  function draw() {
    const all = rows();
    const shown = all.filter(matches).sort(compare);
    body.replaceChildren(...shown.map(row));
    none.hidden = shown.length > 0;
    count.textContent = `${shown.length} of ${all.length}`;
    for (const button of table.querySelectorAll("[data-sort]")) {
      const active = button.dataset.sort === sort.key;
      button.closest("th").setAttribute("aria-sort", active ? (sort.descending ? "descending" : "ascending") : "none");
    }
  }

  function addUserOptions() {
    const select = filters.elements.user;
    const known = new Set([...select.options].map((o) => o.value));
    const names = new Set(rows().map((r) => r.owner).filter((name) => name && !known.has(name)));
    for (const name of [...names].sort()) select.append(Fmt.el("option", { value: name }, name));
  }

  for (const button of table.querySelectorAll("[data-sort]")) {
    button.addEventListener("click", () => {
      const key = button.dataset.sort;
      sort = { key, descending: sort.key === key ? !sort.descending : ["memory", "sm", "running"].includes(key) };
      draw();
    });
  }
  filters.addEventListener("change", draw);
  filters.addEventListener("submit", (event) => event.preventDefault());
  if (params.get("user")) {
    filters.elements.user.append(Fmt.el("option", { value: params.get("user") }, params.get("user")));
    filters.elements.user.value = params.get("user");
  }

  const socket = new LiveSocket(
    { scope: "fleet" },
    {
      snapshot: (message) => {
        state.load(message);
        addUserOptions();
        draw();
      },
      update: (message) => {
        if (message.gpus.some((gpu) => !state.gpus.has(gpu.uuid))) socket.refresh(); // a GPU new to this page
        if (state.apply(message).length) {
          addUserOptions();
          draw();
        }
      },
    },
  );
  setInterval(() => Tiles.tickRunningTimes(), 5000);
})();
