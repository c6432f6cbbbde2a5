// The live notification badge: /ws/notifications/ sends the unread count, then each new notification.
(function () {
  "use strict";
  const badge = document.getElementById("notif-badge");
  if (!badge) return;
  const count = badge.querySelector("[data-unread]");
  let delay = 1000;

  function show(unread) {
    count.textContent = String(unread);
    count.classList.toggle("empty", unread === 0);
    badge.dataset.unread = String(unread);
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(scheme + location.host + "/ws/notifications/");
    socket.onopen = function () { delay = 1000; badge.dataset.live = "1"; };
    socket.onmessage = function (message) {
      const data = JSON.parse(message.data);
      if (typeof data.unread === "number") show(data.unread);
      if (data.type === "notification") {
        badge.title = data.notification.headline;
        document.dispatchEvent(new CustomEvent("fleet:notification", { detail: data.notification }));
      }
    };
    socket.onclose = function (event) {
      badge.dataset.live = "0";
      if (event.code === 4401) return;  // logged out: nothing to wait for
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 30000);
    };
  }
  connect();
})();
