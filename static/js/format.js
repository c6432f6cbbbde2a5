// Formatting GPU figures live, the way monitoring/templatetags/gpu_format.py does on a fresh page.
// A missing value is "N/A", never zero.
"use strict";

const Fmt = {
  NA: "N/A",

  na(value, unit) {
    if (value === null || value === undefined) return Fmt.NA;
    return unit ? `${Math.round(value)} ${unit}` : `${Math.round(value)}`;
  },

  gib(mib) {
    return mib === null || mib === undefined ? Fmt.NA : (mib / 1024).toFixed(1);
  },

  // A KiB/s figure in GB/s with one decimal (NVLink's unit on datasheets).
  gbs(kibs) {
    return kibs === null || kibs === undefined ? Fmt.NA : ((kibs * 1024) / 1e9).toFixed(1);
  },

  linkRates(link) {
    return `${Fmt.gbs(link.tx_kib_s)} / ${Fmt.gbs(link.rx_kib_s)}`;
  },

  memText(gpu) {
    return `${Fmt.gib(gpu.mem_used_mib)} / ${Fmt.gib(gpu.memory_total_mib)} GiB`;
  },

  memPct(gpu) {
    const used = gpu.mem_used_mib, total = gpu.memory_total_mib;
    if (used === null || used === undefined || !total) return 0;
    return Math.max(0, Math.min(100, Math.round((100 * used) / total)));
  },

  kw(watts) {
    if (watts === null || watts === undefined) return Fmt.NA;
    return watts >= 1000 ? `${(watts / 1000).toFixed(1)} kW` : `${Math.round(watts)} W`;
  },

  runningFor(startedAt) {
    if (startedAt === null || startedAt === undefined || startedAt === "") return Fmt.NA;
    let seconds = Math.max(0, Math.floor(Date.now() / 1000 - Number(startedAt)));
    const days = Math.floor(seconds / 86400); seconds -= days * 86400;
    const hours = Math.floor(seconds / 3600); seconds -= hours * 3600;
    const minutes = Math.floor(seconds / 60); seconds -= minutes * 60;
    if (days) return `${days} d ${hours} h`;
    if (hours) return `${hours} h ${minutes} min`;
    return minutes ? `${minutes} min` : `${seconds} s`;
  },

  // <time datetime="…UTC…"> elements show the browser's local time.
  localTimes(root) {
    for (const el of (root || document).querySelectorAll("time[datetime]")) {
      const moment = new Date(el.getAttribute("datetime"));
      if (!isNaN(moment)) {
        el.textContent = moment.toLocaleString();
        el.title = el.getAttribute("datetime");
      }
    }
  },

  el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (text !== undefined) node.textContent = text;
    return node;
  },
};

document.addEventListener("DOMContentLoaded", () => Fmt.localTimes());
