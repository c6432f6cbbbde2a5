// Reservations pages: show times in the browser's zone, and book a free timeline slot with one click.
(function () {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const shown = document.querySelector(".subnav")?.dataset.zone;
  if (zone && !document.cookie.split("; ").some((c) => c.startsWith("tz="))) {
    document.cookie = "tz=" + encodeURIComponent(zone) + "; path=/; max-age=31536000; samesite=lax";
    if (shown && shown !== zone && document.querySelector(".tl")) location.reload();
  }

  const timeline = document.querySelector(".tl");
  if (!timeline) return;
  const start = Number(timeline.dataset.start) * 1000;
  const end = Number(timeline.dataset.end) * 1000;
  const halfHour = 30 * 60 * 1000;
  timeline.addEventListener("click", (event) => {
    const track = event.target.closest(".tl-track[data-gpu]");
    if (!track || event.target.closest(".tl-bar")) return;
    const box = track.getBoundingClientRect();
    const at = start + ((event.clientX - box.left) / box.width) * (end - start);
    const slot = new Date(Math.max(Math.floor(at / halfHour) * halfHour, Math.ceil(Date.now() / halfHour) * halfHour));
    const query = new URLSearchParams({ gpu: track.dataset.gpu, start: slot.toISOString() });
    location.href = timeline.dataset.bookUrl + "?" + query.toString();
  });
})();
