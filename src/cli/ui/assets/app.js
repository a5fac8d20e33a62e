// The inspector's one script (embedded in the binary): live updates.
// An element with data-live="URL" is replaced by each HTML fragment the
// server sends on that event stream (server-sent events); nothing else
// runs, and nothing is loaded from another host.
"use strict";
for (const el of document.querySelectorAll("[data-live]")) {
  const state = document.getElementById("live-state");
  const source = new EventSource(el.dataset.live);
  source.addEventListener("fragment", (e) => {
    el.innerHTML = e.data;
    el.dataset.updates = String(Number(el.dataset.updates || "0") + 1);
    if (state) state.textContent = "live: updated " + new Date().toLocaleTimeString();
  });
  source.onerror = () => { if (state) state.textContent = "live: reconnecting…"; };
  source.onopen = () => { if (state) state.textContent = "live"; };
}
