// The live state of the GPUs and nodes on a page, and the tiles, summary and process tables drawn from it.
// Labels and colours come from inventory/choices.py through the "live-labels" JSON element.
"use strict";

const LABELS = JSON.parse(document.getElementById("live-labels").textContent);

class FleetState {
  constructor() {
    this.gpus = new Map(); // uuid → latest state
    this.nodes = new Map(); // hostname → status
    this.listeners = [];
  }

  // A snapshot replaces everything; it may be a little older than updates already shown, which is fine.
  load(snapshot) {
    this.gpus.clear();
    this.nodes.clear();
    for (const node of snapshot.nodes) {
      this.nodes.set(node.hostname, node.status);
      for (const gpu of node.gpus) this.gpus.set(gpu.uuid, gpu);
    }
  }

  // Returns the GPUs that changed; an update older than what is shown is dropped.
  apply(update) {
    const changed = [];
    for (const state of update.gpus) {
      const known = this.gpus.get(state.uuid);
      if (!known) continue;
      if (known.ts !== null && state.ts !== null && state.ts < known.ts) continue;
      Object.assign(known, state);
      changed.push(known);
    }
    for (const node of update.nodes) this.nodes.set(node.hostname, node.status);
    return changed;
  }

  has(uuids) {
    return uuids.every((uuid) => this.gpus.has(uuid));
  }

  // The same counts as monitoring/live/state.py summarize().
  summary() {
    let busy = 0, idle = 0, offline = 0, power = 0;
    const utils = [];
    for (const gpu of this.gpus.values()) {
      if (this.nodes.get(gpu.node) === "offline" || gpu.ts === null) {
        offline += 1;
        continue;
      }
      if (gpu.band === "idle") idle += 1;
      else if (gpu.band !== "unknown") busy += 1;
      if (gpu.util_gpu !== null) utils.push(gpu.util_gpu);
      power += gpu.power_w || 0;
    }
    const utilization = utils.length ? utils.reduce((a, b) => a + b, 0) / utils.length : null;
    return { gpus: this.gpus.size, busy, idle, offline, utilization, power_w: power };
  }
}

const Tiles = {
  // Free for the viewer, as reservations/availability.py means it: the node is online, nobody else's booking
  // holds it now, and nobody else's process holds its memory (the server names those in in_use_by).
  isFree(gpu, nodeStatus) {
    const viewer = document.body.dataset.viewer || "";
    return (
      nodeStatus === "online" &&
      gpu.ts !== null &&
      !(gpu.holder && gpu.holder.user !== viewer) &&
      (gpu.in_use_by || []).every((name) => name === viewer)
    );
  },

  field(root, name) {
    return root.querySelector(`[data-field="${name}"]`);
  },

  setText(root, name, text) {
    const el = Tiles.field(root, name);
    if (el && el.textContent !== text) el.textContent = text;
  },

  render(tile, gpu, nodeStatus) {
    tile.className = `tile ${LABELS.bands[gpu.band][1]}`;
    tile.dataset.free = Tiles.isFree(gpu, nodeStatus) ? "1" : "0";
    tile.dataset.ts = gpu.ts ?? "";
    Tiles.setText(tile, "util", Fmt.na(gpu.util_gpu, "%"));
    const held = gpu.band === "idle" && gpu.processes && gpu.processes.length;
    Tiles.setText(tile, "band", held ? `${LABELS.bands[gpu.band][0]} · held` : LABELS.bands[gpu.band][0]);
    Tiles.field(tile, "mem-bar").style.width = `${Fmt.memPct(gpu)}%`;
    Tiles.setText(tile, "mem", Fmt.memText(gpu));
    Tiles.setText(tile, "temp", Fmt.na(gpu.temp_c, "°C"));
    Tiles.setText(tile, "power", Fmt.na(gpu.power_w, "W"));
    Tiles.field(tile, "throttle").replaceChildren(
      ...gpu.throttle.map((reason) => Fmt.el("span", { class: `badge ${LABELS.throttle[reason][1]}` }, LABELS.throttle[reason][0])),
    );
    Tiles.field(tile, "procs").replaceChildren(...Tiles.processItems(gpu.processes || []));
  },

  processItems(processes) {
    if (!processes.length) return [Fmt.el("li", { class: "muted" }, "No processes")];
    const items = processes.slice(0, 3).map((p) => {
      const li = Fmt.el("li");
      li.append(Fmt.el("b", {}, p.owner || p.user || "unknown"), ` ${p.name} · ${Fmt.gib(p.mem_used_mib)} GiB`);
      li.append(...Tiles.runNote(p));
      return li;
    });
    if (processes.length > 3) items.push(Fmt.el("li", { class: "muted" }, `+${processes.length - 3} more`));
    return items;
  },

  // A process the fleet started links to its run; a claim the server did not believe is flagged.
  runNote(p) {
    if (p.run) return [" · ", Fmt.el("a", { href: `/runs/${p.run}/`, "data-run": String(p.run) }, `run #${p.run}`)];
    if (p.unverified_run) {
      const title = "The process names this run, which is not placed on this GPU: not believed.";
      return [" ", Fmt.el("span", { class: "badge amber", title, "data-unverified-run": String(p.unverified_run) }, `claims run #${p.unverified_run}`)];
    }
    return [];
  },

  renderNode(section, status) {
    const [label, colour] = LABELS.nodeStatus[status];
    section.classList.remove(...Object.keys(LABELS.nodeStatus));
    section.classList.add(status);
    const badge = Tiles.field(section, "node-status");
    badge.className = `badge ${colour}`;
    badge.textContent = label;
  },

  renderSummary(root, summary) {
    const values = {
      busy: String(summary.busy),
      idle: String(summary.idle),
      offline: String(summary.offline),
      utilization: Fmt.na(summary.utilization, "%"),
      power_w: Fmt.kw(summary.power_w),
    };
    for (const [key, text] of Object.entries(values)) {
      const el = root.querySelector(`[data-stat="${key}"]`);
      if (el && el.textContent !== text) el.textContent = text;
    }
  },

  // Process tables (node and GPU pages), the same columns as templates/fleet/_processes.html.
  renderProcesses(table, gpus, showGpu) {
    const rows = [];
    for (const gpu of gpus) {
      for (const p of gpu.processes || []) rows.push(Tiles.processRow(gpu, p, showGpu));
    }
    table.querySelector("[data-processes]").replaceChildren(...rows);
    const none = table.parentElement.querySelector("[data-no-processes]");
    if (none) none.hidden = rows.length > 0;
  },

  processRow(gpu, p, showGpu) {
    const tr = Fmt.el("tr");
    if (showGpu) {
      const td = Fmt.el("td");
      td.append(Fmt.el("a", { href: `/fleet/gpus/${encodeURIComponent(gpu.uuid)}/` }, `GPU ${gpu.index}`));
      tr.append(td);
    }
    const owner = Fmt.el("td");
    if (p.owner) {
      owner.append(Fmt.el("b", {}, p.owner));
      if (p.owner !== p.user) owner.append(" ", Fmt.el("span", { class: "muted" }, `(${p.user})`));
    } else {
      owner.append(`${p.user || "unknown"} `, Fmt.el("span", { class: "muted" }, "(no researcher)"));
    }
    const command = Fmt.el("td");
    const text = p.cmdline || p.name;
    command.append(Fmt.el("code", { class: "cmd", title: p.cmdline }, text.length > 80 ? `${text.slice(0, 79)}…` : text));
    command.append(...Tiles.runNote(p));
    const memory = p.mem_used_mib === null || p.mem_used_mib === undefined ? Fmt.NA : `${Fmt.gib(p.mem_used_mib)} GiB`;
    tr.append(owner, Fmt.el("td", {}, String(p.pid)), command, Fmt.el("td", {}, memory));
    tr.append(Fmt.el("td", { "data-started": p.started_at ?? "" }, Fmt.runningFor(p.started_at)));
    return tr;
  },

  // Running times tick on without any update.
  tickRunningTimes() {
    for (const td of document.querySelectorAll("td[data-started]")) {
      td.textContent = Fmt.runningFor(td.dataset.started);
    }
  },
};

// Draws a FleetState into the page: tiles, node badges, summary and process tables.
class LivePage {
  constructor(subscription, onGpuChanged) {
    this.state = new FleetState();
    this.onGpuChanged = onGpuChanged || (() => {});
    this.tiles = new Map();
    for (const tile of document.querySelectorAll("[data-gpu]")) this.tiles.set(tile.dataset.gpu, tile);
    this.socket = new LiveSocket(subscription, {
      snapshot: (message) => this.snapshot(message),
      update: (message) => this.update(message),
    });
    setInterval(() => Tiles.tickRunningTimes(), 5000);
  }

  snapshot(message) {
    this.state.load(message);
    const uuids = [...this.state.gpus.keys()];
    if (uuids.length !== this.tiles.size || !uuids.every((uuid) => this.tiles.has(uuid))) {
      this.reloadForNewInventory();
      return;
    }
    for (const gpu of this.state.gpus.values()) this.draw(gpu);
    for (const [hostname, status] of this.state.nodes) this.drawNode(hostname, status);
    this.drawTotals();
  }

  update(message) {
    if (message.gpus.some((gpu) => !this.state.gpus.has(gpu.uuid)) && Date.now() - (this.refreshedAt || 0) > 30000) {
      this.refreshedAt = Date.now();
      this.socket.refresh(); // a GPU this page has not seen: the snapshot tells whether to reload
    }
    const changed = this.state.apply(message);
    for (const gpu of changed) {
      this.draw(gpu);
      this.onGpuChanged(gpu);
    }
    for (const node of message.nodes) this.drawNode(node.hostname, node.status);
    this.drawTotals();
  }

  draw(gpu) {
    const tile = this.tiles.get(gpu.uuid);
    if (tile) Tiles.render(tile, gpu, this.state.nodes.get(gpu.node));
  }

  drawNode(hostname, status) {
    const section = document.querySelector(`[data-node="${CSS.escape(hostname)}"]`);
    if (section) Tiles.renderNode(section, status);
    for (const gpu of this.state.gpus.values()) {
      const tile = this.tiles.get(gpu.uuid);
      if (gpu.node === hostname && tile) tile.dataset.free = Tiles.isFree(gpu, status) ? "1" : "0";
    }
  }

  drawTotals() {
    const summary = document.querySelector("[data-summary]");
    if (summary) Tiles.renderSummary(summary, this.state.summary());
    const processes = document.querySelector("table.processes");
    if (processes) Tiles.renderProcesses(processes, [...this.state.gpus.values()], processes.hasAttribute("data-show-gpu"));
  }

  // Nodes or GPUs were added or removed since the page was drawn; a fresh page is the simplest truth.
  reloadForNewInventory() {
    const last = Number(sessionStorage.getItem("fleet-reloaded-at") || 0);
    if (Date.now() - last > 30000) {
      sessionStorage.setItem("fleet-reloaded-at", String(Date.now()));
      location.reload();
    }
  }
}
