// /ws/live/ client: subscribes, hands snapshots and updates to the page, reconnects with backoff.
"use strict";

class LiveSocket {
  constructor(subscription, handlers) {
    this.subscription = { type: "subscribe", ...subscription };
    this.handlers = handlers;
    this.attempt = 0;
    this.stateEl = document.querySelector("[data-live-state]");
    this.connect();
  }

  url() {
    return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/live/`;
  }

  connect() {
    this.show("connecting…", "");
    this.socket = new WebSocket(this.url());
    this.socket.onopen = () => this.socket.send(JSON.stringify(this.subscription));
    this.socket.onmessage = (event) => this.receive(JSON.parse(event.data));
    this.socket.onclose = (event) => this.closed(event);
  }

  receive(message) {
    if (message.type === "snapshot") {
      this.attempt = 0;
      this.show("live", "live");
      this.handlers.snapshot(message);
    } else if (message.type === "update") {
      this.handlers.update(message);
    } else if (message.type === "error") {
      console.warn("live:", message.detail);
      this.show(`live updates refused: ${message.detail}`, "error");
    }
  }

  async closed(event) {
    // A refused handshake looks like any dropped connection (1006): ask the page itself whether we are logged out.
    if (event.code === 4401 || (await this.loggedOut())) {
      this.show("logged out: reload the page to log in again", "error");
      return;
    }
    // Backoff with jitter, so a restarted server is not hit by every page at once.
    const delay = Math.min(30000, 500 * 2 ** this.attempt) * (0.5 + Math.random() / 2);
    this.attempt += 1;
    this.show(`reconnecting in ${Math.ceil(delay / 1000)} s…`, "stale");
    setTimeout(() => this.connect(), delay);
  }

  async loggedOut() {
    try {
      const response = await fetch(location.href, { method: "HEAD", redirect: "manual", credentials: "same-origin" });
      return response.type === "opaqueredirect";
    } catch (error) {
      return false; // the server is down: keep trying
    }
  }

  // Subscribe again: the server answers with a fresh snapshot.
  refresh() {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(this.subscription));
  }

  show(text, state) {
    if (!this.stateEl) return;
    this.stateEl.textContent = text;
    this.stateEl.dataset.state = state;
  }
}
