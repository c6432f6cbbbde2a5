// The Fleet page: every tile live, and filters by model, node and free GPUs.
"use strict";

(() => {
  const form = document.querySelector("[data-filters]");
  const empty = document.querySelector("[data-empty-filter]");

  function applyFilters() {
    const model = form.elements.model.value;
    const node = form.elements.node.value;
    const freeOnly = form.elements.free.checked;
    let shown = 0;
    for (const section of document.querySelectorAll("section[data-node]")) {
      let shownHere = 0;
      for (const tile of section.querySelectorAll("[data-gpu]")) {
        const visible =
          (!model || tile.dataset.model === model) &&
          (!node || section.dataset.node === node) &&
          (!freeOnly || tile.dataset.free === "1");
        tile.hidden = !visible;
        shownHere += visible ? 1 : 0;
      }
      const filtering = model || node || freeOnly;
      section.hidden = filtering && shownHere === 0;
      shown += shownHere;
    }
    if (empty) empty.hidden = shown > 0 || !document.querySelector("[data-gpu]");
  }

  if (form) {
    form.addEventListener("change", applyFilters);
    form.addEventListener("submit", (event) => event.preventDefault());
  }
  // "Free only" depends on live state, so filters are applied again after every update.
  const page = new LivePage({ scope: "fleet" });
  const update = page.update.bind(page);
  page.update = (message) => {
    update(message);
    if (form) applyFilters();
  };
})();
