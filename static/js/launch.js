// The launch form: show the fields the chosen mode and workload take, what the chosen nodes offer, and the cost.
(function () {
  const form = document.getElementById("launch-form");
  if (!form) return;
  const params = JSON.parse(document.getElementById("workload-params").textContent);
  const defaults = JSON.parse(document.getElementById("workload-defaults").textContent);
  const history = JSON.parse(document.getElementById("history").textContent);
  const processPerGpu = JSON.parse(document.getElementById("process-per-gpu").textContent);
  const field = (name) => form.elements[name];

  const envs = JSON.parse(document.getElementById("environments").textContent);
  const mode = () => (form.querySelector("input[name=mode]:checked") || {}).value || "preset";

  function showMode() {
    form.querySelectorAll("[data-mode]").forEach((box) => { box.hidden = box.dataset.mode !== mode(); });
  }

  // The hosts the run would use: its GPUs' nodes, or the CPU-only node.
  function chosenHosts() {
    const hosts = new Set([...form.querySelectorAll("input[name=gpus]:checked")].map((box) => box.dataset.node));
    const node = field("node").value;
    if (!hosts.size && node && envs.host_of_node[node]) hosts.add(envs.host_of_node[node]);
    return [...hosts];
  }

  // What the chosen nodes' workers report for the chosen kind, offered as suggestions (the launch checks any value).
  function showEnvironments() {
    const kind = field("env_kind").value;
    form.querySelector("[data-field=env_ref]").hidden = !envs.needs_ref[kind];
    const hosts = chosenHosts();
    const offeredOn = new Map();
    (hosts.length ? hosts : Object.keys(envs.offered)).forEach((host) => {
      ((envs.offered[host] || {})[kind] || []).forEach((ref) => offeredOn.set(ref, [...(offeredOn.get(ref) || []), host]));
    });
    const list = document.getElementById("env-refs");
    list.replaceChildren(...[...offeredOn].map(([ref, where]) => {
      const option = document.createElement("option");
      option.value = ref;
      option.label = where.join(", ");
      return option;
    }));
    const note = document.getElementById("env-offered");
    if (!hosts.length) note.textContent = "Choose GPUs or a node to see what it offers; or type a path or image.";
    else if (!offeredOn.size) note.textContent = "Nothing of this kind reported by " + hosts.join(", ") + "; type a path or image.";
    else note.textContent = offeredOn.size + " offered by " + hosts.join(", ") + ": pick one or type another.";
  }

  function showFields() {
    showMode();
    showEnvironments();
    const workload = field("workload").value;
    const taken = params[workload] || ["epochs", "batch_size", "lr", "optimizer", "seed"];
    form.querySelectorAll("[data-param]").forEach((box) => {
      const name = box.dataset.param;
      box.hidden = !taken.includes(name);
      const input = box.querySelector("input, select");
      const value = (defaults[workload] || {})[name];
      if (input && value !== undefined) input.placeholder = String(value);
    });
    form.querySelector("[data-field=script]").hidden = workload !== "script" || mode() !== "preset";
  }

  function money(value) { return "$" + value.toFixed(2); }
  function minutes(seconds) { return seconds < 90 ? Math.round(seconds) + " s" : Math.round(seconds / 60) + " min"; }

  function estimate() {
    const picked = [...form.querySelectorAll("input[name=gpus]:checked")];
    const out = document.getElementById("estimate");
    const basis = document.getElementById("estimate-basis");
    if (!picked.length) { out.textContent = "$0.00"; basis.textContent = "(CPU-only: the fleet prices GPU-hours)"; return; }
    if (picked.some((box) => box.dataset.rate === "")) { out.textContent = "N/A"; basis.textContent = "(a chosen GPU has no price)"; return; }
    const rate = picked.reduce((sum, box) => sum + parseFloat(box.dataset.rate), 0);
    const workload = field("workload").value, strategy = field("strategy").value;
    const nodes = new Set(picked.map((box) => box.dataset.node)).size;
    const processes = parseInt(field("processes").value, 10) || (processPerGpu[strategy] ? Math.floor(picked.length / nodes) : 1);
    const epochs = mode() === "preset" && (parseInt(field("epochs").value, 10) || (defaults[workload] || {}).epochs);
    const perEpoch = history[workload + "|" + strategy + "|" + processes];
    if (perEpoch && epochs) {
      const seconds = perEpoch * epochs;
      out.textContent = money(rate * seconds / 3600);
      basis.textContent = "(~" + minutes(seconds) + " at " + money(rate) + "/h, from past runs like this one)";
    } else {
      out.textContent = money(rate) + " per hour";
      basis.textContent = "(no finished run like this one yet to tell how long it takes)";
    }
  }

  form.addEventListener("change", () => { showFields(); estimate(); });
  form.addEventListener("input", estimate);
  showFields();
  estimate();
})();
